import type { Metadata } from "next";
import { StuckJobsPanel } from "@/components/console-panels";
import { consolePagePrincipal } from "@/lib/http/principal";

export const metadata: Metadata = { title: "Stuck jobs" };

export default async function StuckJobsPage() {
  await consolePagePrincipal();
  return (
    <div className="space-y-6">
      <div>
        <h1 className="text-2xl font-semibold">Stuck jobs</h1>
        <p className="text-sm text-slate-600">
          Running jobs whose lease expired or whose heartbeat is late, jobs due for 10 minutes that have not started,
          and jobs retrying again and again — each with what to do about it.
        </p>
      </div>
      <StuckJobsPanel />
    </div>
  );
}
