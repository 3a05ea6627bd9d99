import type { Metadata } from "next";
import { DeadLettersPanel } from "@/components/dead-letters-panel";
import { consolePagePrincipal } from "@/lib/http/principal";

export const metadata: Metadata = { title: "Dead letters" };

export default async function DeadLettersPage() {
  const principal = await consolePagePrincipal();
  return (
    <div className="space-y-6">
      <div>
        <h1 className="text-2xl font-semibold">Dead letters</h1>
        <p className="text-sm text-slate-600">
          Jobs that ran out of attempts or failed for good, one entry per job people see (a pipeline&apos;s stages fail
          with it), grouped by the error they died with (ids, workers, hosts, durations and numbers masked) and sorted
          by whose failure it is. Fix the cause, then replay the group: each job runs again as a new job with a fresh
          budget.
        </p>
      </div>
      <DeadLettersPanel isAdmin={principal.isPlatformAdmin} />
    </div>
  );
}
