import Link from "next/link";
import { redirect } from "next/navigation";
import type { ReactNode } from "react";
import { signOut } from "@/lib/http/auth";
import { sessionPrincipal } from "@/lib/http/principal";

async function logout() {
  "use server";
  await signOut({ redirectTo: "/login" });
}

export default async function UserLayout({ children }: { children: ReactNode }) {
  const principal = await sessionPrincipal();
  if (!principal) redirect("/login");
  return (
    <div>
      <header className="border-b border-slate-200 bg-white">
        <nav aria-label="Main" className="mx-auto flex max-w-6xl items-center gap-6 px-6 py-3">
          <Link href="/exports" className="text-lg font-semibold text-indigo-700">
            Conveyor
          </Link>
          <Link href="/exports" className="text-sm text-slate-700 hover:text-slate-900">
            Exports
          </Link>
          {(principal.isPlatformAdmin || principal.role === "operator") && (
            <>
              <Link href="/ops/jobs" className="text-sm text-slate-700 hover:text-slate-900">
                Jobs
              </Link>
              <Link href="/ops/queues" className="text-sm text-slate-700 hover:text-slate-900">
                Queues
              </Link>
              <Link href="/ops/dead-letters" className="text-sm text-slate-700 hover:text-slate-900">
                Dead letters
              </Link>
              <Link href="/ops/stuck" className="text-sm text-slate-700 hover:text-slate-900">
                Stuck
              </Link>
              <Link href="/ops/audit" className="text-sm text-slate-700 hover:text-slate-900">
                Audit
              </Link>
            </>
          )}
          {principal.isPlatformAdmin && (
            <Link href="/ops/workers" className="text-sm text-slate-700 hover:text-slate-900">
              Workers
            </Link>
          )}
          <Link href="/settings" className="text-sm text-slate-700 hover:text-slate-900">
            API tokens
          </Link>
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
