import type { Metadata } from "next";
import Link from "next/link";
import { redirect } from "next/navigation";
import { ScheduleForm } from "@/components/schedule-form";
import { ScheduleList } from "@/components/schedule-list";
import { sessionPrincipal } from "@/lib/http/principal";

export const metadata: Metadata = { title: "Schedules" };

/** The list first; New schedule (`?new=1`) opens the form above it, which takes the focus. */
export default async function SchedulesPage({
  searchParams,
}: {
  searchParams: Promise<Record<string, string | string[] | undefined>>;
}) {
  const principal = await sessionPrincipal();
  if (!principal) redirect("/login");
  const open = (await searchParams).new === "1";
  return (
    <div className="space-y-6">
      <div className="flex flex-wrap items-start justify-between gap-3">
        <div>
          <h1 className="text-2xl font-semibold">Schedules</h1>
          <p className="text-sm text-slate-600">
            Exports that run by themselves: hourly, daily, weekly or on any cron expression, in the time zone you
            choose. Each run is an ordinary job, once per time.
          </p>
        </div>
        {principal.tenantId && !open && (
          <Link
            href="/schedules?new=1"
            scroll={false}
            className="rounded border border-indigo-700 bg-indigo-700 px-4 py-2 text-sm font-medium text-white hover:bg-indigo-600"
          >
            New schedule
          </Link>
        )}
      </div>
      {principal.tenantId ? (
        open && <ScheduleForm closeHref="/schedules" />
      ) : (
        <p className="text-sm text-slate-600">
          A schedule belongs to a tenant: platform admins follow every tenant&apos;s under Tenant schedules in the
          console.
        </p>
      )}
      <ScheduleList isAdmin={principal.isPlatformAdmin} />
    </div>
  );
}
