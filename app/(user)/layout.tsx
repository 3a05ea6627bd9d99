import Link from "next/link";
import { redirect } from "next/navigation";
import type { ReactNode } from "react";
import { signOut } from "@/lib/http/auth";
import { isOperator } from "@/lib/auth/authorize";
import { sessionPrincipal } from "@/lib/http/principal";

async function logout() {
  "use server";
  await signOut({ redirectTo: "/login" });
}

/** The main navigation; console pages for operators and platform admins, the fleet for admins. */
const NAV: { href: string; label: string; for: "everyone" | "operators" | "admins" }[] = [
  { href: "/exports", label: "Exports", for: "everyone" },
  { href: "/schedules", label: "Schedules", for: "everyone" },
  { href: "/ops/overview", label: "Overview", for: "operators" },
  { href: "/ops/jobs", label: "Jobs", for: "operators" },
  { href: "/ops/queues", label: "Queues", for: "operators" },
  { href: "/ops/dead-letters", label: "Dead letters", for: "operators" },
  { href: "/ops/schedules", label: "All schedules", for: "operators" },
  { href: "/ops/webhooks", label: "Webhooks", for: "operators" },
  { href: "/ops/stuck", label: "Stuck", for: "operators" },
  { href: "/ops/audit", label: "Audit", for: "operators" },
  { href: "/ops/people", label: "People", for: "operators" },
  { href: "/ops/workers", label: "Workers", for: "admins" },
  { href: "/settings", label: "Settings", for: "everyone" },
];

export default async function UserLayout({ children }: { children: ReactNode }) {
  const principal = await sessionPrincipal();
  if (!principal) redirect("/login");
  return (
    <div>
      <header className="border-b border-slate-200 bg-white">
        <nav aria-label="Main" className="mx-auto flex max-w-6xl flex-wrap items-center gap-x-6 gap-y-2 px-6 py-3">
          <Link href="/exports" className="text-lg font-semibold text-indigo-700">
            Conveyor
          </Link>
          {NAV.filter(
            (n) => n.for === "everyone" || (n.for === "admins" ? principal.isPlatformAdmin : isOperator(principal)),
          ).map((n) => (
            <Link key={n.href} href={n.href} className="text-sm text-slate-700 hover:text-slate-900">
              {n.label}
            </Link>
          ))}
          <span className="ml-auto text-sm text-slate-500" data-testid="whoami">
            {principal.email}
            {principal.tenantSlug ? ` · ${principal.tenantSlug} (${principal.role})` : ""}
            {principal.isPlatformAdmin ? " · platform admin" : ""}
          </span>
          <form action={logout}>
            <button type="submit" className="text-sm text-slate-600 underline hover:text-slate-900">
              Sign out
            </button>
          </form>
        </nav>
      </header>
      <main className="mx-auto max-w-6xl px-6 py-8">{children}</main>
    </div>
  );
}
