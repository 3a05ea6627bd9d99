import type { Metadata } from "next";
import { redirect } from "next/navigation";
import { ScheduleForm } from "@/components/schedule-form";
import { ScheduleList } from "@/components/schedule-list";
import { sessionPrincipal } from "@/lib/http/principal";

export const metadata: Metadata = { title: "Schedules" };

export default async function SchedulesPage() {
  const principal = await sessionPrincipal();
  if (!principal) redirect("/login");
  return (
    <div className="space-y-6">
      <div>
        <h1 className="text-2xl font-semibold">Schedules</h1>
        <p className="text-sm text-slate-600">
          Exports that run by themselves: hourly, daily, weekly or on any cron expression, in the time zone you choose.
          Each run is an ordinary job, once per time.
        </p>
      </div>
      {principal.tenantId ? (
        <ScheduleForm />
      ) : (
        <p className="text-sm text-slate-600">
          A schedule belongs to a tenant: platform admins follow every tenant&apos;s under All schedules in the console.
        </p>
      )}
      <ScheduleList isAdmin={principal.isPlatformAdmin} />
    </div>
  );
}
