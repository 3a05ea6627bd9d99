import { redirect } from "next/navigation";
import type { ReactNode } from "react";
import { signOut } from "@/lib/http/auth";
import { isOperator } from "@/lib/auth/authorize";
import { sessionPrincipal } from "@/lib/http/principal";
import { MainNav } from "@/components/main-nav";
import { queueNames } from "@/lib/jobs/registry";
import { QueueNamesProvider } from "@/lib/client/queues";

async function logout() {
  "use server";
  await signOut({ redirectTo: "/login" });
}

/** The main navigation; console pages for operators and platform admins, the fleet for admins. */
const NAV: { href: string; label: string; for: "everyone" | "members" | "operators" | "admins" }[] = [
  { href: "/exports", label: "Exports", for: "everyone" },
  // Imports write into a tenant's data: members and operators of one.
  { href: "/imports", label: "Imports", for: "members" },
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
  const items = NAV.filter((n) =>
    n.for === "everyone"
      ? true
      : n.for === "members"
        ? principal.tenantId !== null
        : n.for === "admins"
          ? principal.isPlatformAdmin
          : isOperator(principal),
  ).map(({ href, label }) => ({ href, label }));
  const who = `${principal.email}${principal.tenantSlug ? ` · ${principal.tenantSlug} (${principal.role})` : ""}${
    principal.isPlatformAdmin ? " · platform admin" : ""
  }`;
  return (
    <div>
      <a
        href="#main"
        className="sr-only focus:not-sr-only focus:absolute focus:left-2 focus:top-2 focus:z-50 focus:rounded focus:bg-white focus:px-3 focus:py-2 focus:shadow"
      >
        Skip to content
      </a>
      <header className="border-b border-slate-200 bg-white">
        <MainNav
          items={items}
          who={who}
          signOut={
            <form action={logout}>
              <button type="submit" className="text-sm text-slate-600 underline hover:text-slate-900">
                Sign out
              </button>
            </form>
          }
        />
      </header>
      <main id="main" tabIndex={-1} className="mx-auto max-w-6xl px-4 py-6 sm:px-6 sm:py-8">
        <QueueNamesProvider names={queueNames()}>{children}</QueueNamesProvider>
      </main>
    </div>
  );
}
