import type { Metadata } from "next";
import { ScheduleList } from "@/components/schedule-list";
import { consolePagePrincipal } from "@/lib/http/principal";

export const metadata: Metadata = { title: "Tenant schedules" };

export default async function ConsoleSchedulesPage() {
  const principal = await consolePagePrincipal();
  return (
    <div className="space-y-6">
      <div>
        <h1 className="text-2xl font-semibold">Tenant schedules</h1>
        <p className="text-sm text-slate-600">
          {principal.isPlatformAdmin
            ? "Every tenant's schedules: how they run (missed times, times skipped for an overlap), and pause or run one now."
            : `Every schedule of ${principal.tenantSlug}, whoever made it: how they run (missed times, times skipped for an overlap), and pause or run one now.`}
        </p>
      </div>
      <ScheduleList variant="console" isAdmin={principal.isPlatformAdmin} />
    </div>
  );
}
