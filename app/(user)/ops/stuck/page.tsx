import type { Metadata } from "next";
import { StuckJobsPanel } from "@/components/console-panels";
import { consolePagePrincipal } from "@/lib/http/principal";

export const metadata: Metadata = { title: "Stuck jobs" };

export default async function StuckJobsPage() {
  const principal = await consolePagePrincipal();
  return (
    <div className="space-y-6">
      <div>
        <h1 className="text-2xl font-semibold">Stuck jobs</h1>
        <p className="text-sm text-slate-600">
          Jobs held by a pause (listed at once), exports waiting for held or slow parts, running jobs whose lease
          expired or whose heartbeat is late, jobs due for 10 minutes that have not started, and jobs retrying again and
          again: grouped by cause, each group with the action that fixes it.
        </p>
      </div>
      <StuckJobsPanel isAdmin={principal.isPlatformAdmin} />
    </div>
  );
}
