/**
 * The main navigation: the kinds' pages (`lib/client/kinds`), one's own jobs of every kind, and
 * the console's own. People's pages first, then the console's (the kinds' console pages
 * after Dead letters), Settings last.
 */
import { KINDS } from "./kinds";
import type { NavAudience, NavEntry } from "./kinds/types";

export type { NavAudience };

type Page = { href: string; label: string; for: NavAudience };

const CONSOLE_FIRST: Page[] = [
  { href: "/ops/overview", label: "Overview", for: "operators" },
  { href: "/ops/jobs", label: "Jobs", for: "operators" },
  { href: "/ops/queues", label: "Queues", for: "operators" },
  { href: "/ops/dead-letters", label: "Dead letters", for: "operators" },
];
const CONSOLE_LAST: Page[] = [
  { href: "/ops/stuck", label: "Stuck", for: "operators" },
  { href: "/ops/audit", label: "Audit", for: "operators" },
  { href: "/ops/people", label: "People", for: "operators" },
  { href: "/ops/workers", label: "Workers", for: "admins" },
  { href: "/settings", label: "Settings", for: "everyone" },
];

const page = ({ href, label, for: audience }: NavEntry): Page => ({ href, label, for: audience });
const entries = KINDS.flatMap((k) => k.nav ?? []);

/** Every kind's jobs of one's own on one page (app/(user)/jobs). */
const HISTORY: Page = { href: "/jobs", label: "My jobs", for: "everyone" };

export const NAV: readonly Page[] = [
  ...entries.filter((e) => e.area === "user").map(page),
  HISTORY,
  ...CONSOLE_FIRST,
  ...entries.filter((e) => e.area === "console").map(page),
  ...CONSOLE_LAST,
];

/** The pages a principal sees: `members` for one who belongs to a tenant, `operators` for operators and admins. */
export function navFor(who: { member: boolean; operator: boolean; admin: boolean }): { href: string; label: string }[] {
  const sees = (a: NavAudience) =>
    a === "everyone" || (a === "members" ? who.member : a === "admins" ? who.admin : who.operator);
  return NAV.filter((n) => sees(n.for)).map(({ href, label }) => ({ href, label }));
}
