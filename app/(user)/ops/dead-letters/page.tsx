import type { Metadata } from "next";
import { DeadLettersPanel } from "@/components/dead-letters-panel";
import { consolePagePrincipal } from "@/lib/http/principal";

export const metadata: Metadata = { title: "Dead letters" };

export default async function DeadLettersPage() {
  await consolePagePrincipal();
  return (
    <div className="space-y-6">
      <div>
        <h1 className="text-2xl font-semibold">Dead letters</h1>
        <p className="text-sm text-slate-600">
          Jobs that ran out of attempts or failed for good, grouped by the error they died with (ids and numbers
          masked). Fix the cause, then replay the group: each job runs again as a new job with a fresh budget.
        </p>
      </div>
      <DeadLettersPanel />
    </div>
  );
}
