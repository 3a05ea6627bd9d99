import type { Metadata } from "next";
import { OverviewPanel } from "@/components/overview-panel";
import { consolePagePrincipal } from "@/lib/http/principal";

export const metadata: Metadata = { title: "Overview" };

export default async function OverviewPage() {
  const principal = await consolePagePrincipal();
  return (
    <div className="space-y-6">
      <div>
        <h1 className="text-2xl font-semibold">Overview</h1>
        <p className="text-sm text-slate-600">
          {principal.isPlatformAdmin ? "Every tenant" : "Your tenant"}: whether each queue keeps up, what waits, runs
          and died per queue and job type, throughput and failures over the last 5 minutes and hour, and how long jobs
          take.
        </p>
      </div>
      <OverviewPanel isAdmin={principal.isPlatformAdmin} />
    </div>
  );
}
