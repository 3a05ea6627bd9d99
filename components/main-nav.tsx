"use client";

import Link from "next/link";
import { usePathname } from "next/navigation";
import { useEffect, useRef, useState, type ReactNode } from "react";
import type { NavSection } from "@/lib/client/nav";

export type NavItem = { href: string; label: string };

/** The link of the page shown: the longest href that the path is, or is under ("/ops/jobs" not "/jobs"). */
function currentHref(pathname: string, sections: NavSection[]): string | null {
  let best: string | null = null;
  for (const s of sections)
    for (const n of s.items)
      if ((pathname === n.href || pathname.startsWith(`${n.href}/`)) && n.href.length > (best?.length ?? 0))
        best = n.href;
  return best;
}

/**
 * The main navigation, in named sections (`lib/client/nav.ts`): from `lg` up, one's own work and
 * Settings on the first row and the console on a band of its own below it, labelled "Console";
 * below `lg`, a Menu button opens the same sections as lists under their headings, with who is
 * signed in and Sign out. The current page's link has `aria-current="page"`.
 */
export function MainNav({
  sections,
  home,
  who,
  signOut,
  actions,
}: {
  sections: NavSection[];
  /** Where the brand links to: the signed-in person's landing page. */
  home: string;
  who: ReactNode;
  signOut: ReactNode;
  /** Controls shown at every width, before who is signed in (the notification bell). */
  actions?: ReactNode;
}) {
  const pathname = usePathname();
  const [open, setOpen] = useState(false);
  const menuRef = useRef<HTMLDivElement>(null);
  // A new page closes the menu.
  useEffect(() => setOpen(false), [pathname]);
  useEffect(() => {
    if (!open) return;
    const onKey = (e: KeyboardEvent) => e.key === "Escape" && setOpen(false);
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [open]);
  const current = currentHref(pathname, sections);
  const link = (n: NavItem, extra: string) => {
    const here = n.href === current;
    return (
      <Link
        key={n.href}
        href={n.href}
        aria-current={here ? "page" : undefined}
        className={`${extra} ${here ? "font-semibold text-indigo-700" : "text-slate-700 hover:text-slate-900"}`}
      >
        {n.label}
      </Link>
    );
  };
  const consoleSection = sections.find((s) => s.id === "console");
  const rowSections = sections.filter((s) => s.id !== "console");
  return (
    <nav aria-label="Main">
      <div className="mx-auto max-w-6xl px-4 py-3 sm:px-6">
        <div className="flex items-center gap-x-5 gap-y-2">
          <Link href={home} className="text-lg font-semibold text-indigo-700">
            Conveyor
          </Link>
          <div className="hidden items-center gap-x-5 lg:flex">
            {rowSections.map((s, i) => (
              <ul
                key={s.id}
                aria-label={s.label}
                className={`flex flex-wrap items-center gap-x-5 gap-y-1 ${i > 0 ? "border-l border-slate-200 pl-5" : ""}`}
              >
                {s.items.map((n) => (
                  <li key={n.href}>{link(n, "text-sm")}</li>
                ))}
              </ul>
            ))}
          </div>
          {actions && <div className="ml-auto flex shrink-0 items-center">{actions}</div>}
          <div className={`${actions ? "" : "ml-auto "}hidden shrink-0 items-center gap-4 whitespace-nowrap lg:flex`}>
            <span
              className="max-w-64 truncate text-sm text-slate-500"
              data-testid="whoami"
              title={typeof who === "string" ? who : undefined}
            >
              {who}
            </span>
            {signOut}
          </div>
          <button
            type="button"
            className={`${actions ? "" : "ml-auto "}rounded border border-slate-300 px-3 py-1.5 text-sm lg:hidden`}
            aria-expanded={open}
            aria-controls="main-menu"
            onClick={() => setOpen((o) => !o)}
          >
            {open ? "Close menu" : "Menu"}
          </button>
        </div>
      </div>
      {consoleSection && (
        <div className="hidden border-t border-slate-200 bg-slate-50 lg:block" data-testid="nav-console">
          <div className="mx-auto flex max-w-6xl items-center gap-x-5 px-4 py-2 sm:px-6">
            <span id="nav-console-label" className="text-xs font-semibold uppercase tracking-wide text-slate-500">
              {consoleSection.label}
            </span>
            <ul aria-labelledby="nav-console-label" className="flex flex-wrap items-center gap-x-5 gap-y-1">
              {consoleSection.items.map((n) => (
                <li key={n.href}>{link(n, "text-sm")}</li>
              ))}
            </ul>
          </div>
        </div>
      )}
      {open && (
        <div
          id="main-menu"
          ref={menuRef}
          className="mx-auto max-w-6xl space-y-3 border-t border-slate-200 px-4 pb-3 pt-3 sm:px-6 lg:hidden"
        >
          {sections.map((s) => (
            <section key={s.id} aria-labelledby={`menu-${s.id}`}>
              <h2 id={`menu-${s.id}`} className="px-2 text-xs font-semibold uppercase tracking-wide text-slate-500">
                {s.label}
              </h2>
              <ul className="mt-1 grid grid-cols-2 gap-1">
                {s.items.map((n) => (
                  <li key={n.href}>{link(n, "block rounded px-2 py-2 text-sm hover:bg-slate-50")}</li>
                ))}
              </ul>
            </section>
          ))}
          <div className="flex flex-wrap items-center gap-3 border-t border-slate-100 pt-3">
            <span className="break-all text-sm text-slate-500" data-testid="whoami-menu">
              {who}
            </span>
            {signOut}
          </div>
        </div>
      )}
    </nav>
  );
}
