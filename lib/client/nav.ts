/**
 * The main navigation, in sections: the pages people work in (the kinds' own pages and one's own
 * jobs of every kind), the operator console (its own pages, the kinds' console pages after Dead
 * letters), and Settings. A kind says which section each of its pages belongs to (`area` of its
 * `nav` entries in `lib/client/kinds`); nothing here names a kind.
 */
import { KINDS } from "./kinds";
import type { NavAudience, NavEntry } from "./kinds/types";

export type { NavAudience };

type Page = { href: string; label: string; for: NavAudience };

/** The sections, in the order they are shown. */
export type NavSectionId = "work" | "console" | "settings";

/** A section's name, as its heading reads (the Menu, and the console's band on desktop). */
export const SECTION_LABEL: Record<NavSectionId, string> = {
  work: "Your work",
  console: "Console",
  settings: "Account",
};

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
];
const SETTINGS: Page[] = [{ href: "/settings", label: "Settings", for: "everyone" }];

const page = ({ href, label, for: audience }: NavEntry): Page => ({ href, label, for: audience });
const entries = KINDS.flatMap((k) => k.nav ?? []);

/** Every kind's jobs of one's own on one page (app/(user)/jobs). */
const HISTORY: Page = { href: "/jobs", label: "My jobs", for: "everyone" };

/** Each section's pages, for every audience. */
export const NAV: readonly { id: NavSectionId; pages: readonly Page[] }[] = [
  { id: "work", pages: [...entries.filter((e) => e.area === "user").map(page), HISTORY] },
  {
    id: "console",
    pages: [...CONSOLE_FIRST, ...entries.filter((e) => e.area === "console").map(page), ...CONSOLE_LAST],
  },
  { id: "settings", pages: SETTINGS },
];

export type Who = { member: boolean; operator: boolean; admin: boolean };
export type NavLink = { href: string; label: string };
export type NavSection = { id: NavSectionId; label: string; items: NavLink[] };

const sees = (who: Who, a: NavAudience) =>
  a === "everyone" || (a === "members" ? who.member : a === "admins" ? who.admin : who.operator);

/**
 * The sections a principal sees, each with its pages (empty sections left out): `members` pages for
 * one who belongs to a tenant, `operators` for operators and platform admins, `admins` for the latter.
 */
export function navSectionsFor(who: Who): NavSection[] {
  return NAV.map((s) => ({
    id: s.id,
    label: SECTION_LABEL[s.id],
    items: s.pages.filter((p) => sees(who, p.for)).map(({ href, label }) => ({ href, label })),
  })).filter((s) => s.items.length > 0);
}

/** Every page a principal sees, in the navigation's order. */
export function navFor(who: Who): NavLink[] {
  return navSectionsFor(who).flatMap((s) => s.items);
}

/**
 * Where a principal lands after signing in (and on "/"): operators and platform admins on the
 * console's first page (the overview), everyone else on the first page of their work.
 */
export function landingFor(who: Who): string {
  const sections = navSectionsFor(who);
  const first = (id: NavSectionId) => sections.find((s) => s.id === id)?.items[0]?.href;
  return (who.operator ? first("console") : undefined) ?? first("work") ?? "/settings";
}
