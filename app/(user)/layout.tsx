import { redirect } from "next/navigation";
import type { ReactNode } from "react";
import { signOut } from "@/lib/http/auth";
import { isOperator } from "@/lib/auth/authorize";
import { sessionPrincipal } from "@/lib/http/principal";
import { MainNav } from "@/components/main-nav";
import { NotificationBell } from "@/components/notification-bell";
import { TimeZoneSwitch } from "@/components/time-zone-switch";
import { queueNames } from "@/lib/jobs/registry";
import { QueueNamesProvider } from "@/lib/client/queues";
import { landingFor, navSectionsFor } from "@/lib/client/nav";

async function logout() {
  "use server";
  await signOut({ redirectTo: "/login" });
}

export default async function UserLayout({ children }: { children: ReactNode }) {
  const principal = await sessionPrincipal();
  if (!principal) redirect("/login");
  // The kinds' pages and the console's, in sections (lib/client/nav.ts); console pages for operators and platform admins, the fleet for admins.
  const viewer = {
    member: principal.tenantId !== null,
    operator: isOperator(principal),
    admin: principal.isPlatformAdmin,
  };
  const sections = navSectionsFor(viewer);
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
          sections={sections}
          home={landingFor(viewer)}
          who={who}
          actions={principal.tenantId ? <NotificationBell /> : undefined}
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
      <footer className="mx-auto max-w-6xl px-4 pb-6 sm:px-6">
        <TimeZoneSwitch />
      </footer>
    </div>
  );
}
