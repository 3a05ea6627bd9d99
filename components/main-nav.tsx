"use client";

import Link from "next/link";
import { usePathname } from "next/navigation";
import { useEffect, useRef, useState, type ReactNode } from "react";

export type NavItem = { href: string; label: string };

function isCurrent(pathname: string, href: string): boolean {
  return pathname === href || pathname.startsWith(`${href}/`);
}

/**
 * The main navigation: a row of links from `lg` up, a Menu button that opens
 * the same links as a list below it. The current page's link has
 * `aria-current="page"`.
 */
export function MainNav({
  items,
  who,
  signOut,
  actions,
}: {
  items: NavItem[];
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
  const link = (n: NavItem, extra: string) => {
    const current = isCurrent(pathname, n.href);
    return (
      <Link
        key={n.href}
        href={n.href}
        aria-current={current ? "page" : undefined}
        className={`${extra} ${current ? "font-semibold text-indigo-700" : "text-slate-700 hover:text-slate-900"}`}
      >
        {n.label}
      </Link>
    );
  };
  return (
    <nav aria-label="Main" className="mx-auto max-w-6xl px-4 py-3 sm:px-6">
      <div className="flex items-center gap-x-5 gap-y-2">
        <Link href={items[0]?.href ?? "/"} className="text-lg font-semibold text-indigo-700">
          Conveyor
        </Link>
        <div className="hidden flex-wrap items-center gap-x-5 gap-y-1 lg:flex">
          {items.map((n) => link(n, "text-sm"))}
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
      {open && (
        <div id="main-menu" ref={menuRef} className="mt-3 border-t border-slate-200 pt-3 lg:hidden">
          <ul className="grid grid-cols-2 gap-1">
            {items.map((n) => (
              <li key={n.href}>{link(n, "block rounded px-2 py-2 text-sm hover:bg-slate-50")}</li>
            ))}
          </ul>
          <div className="mt-3 flex flex-wrap items-center gap-3 border-t border-slate-100 pt-3">
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
