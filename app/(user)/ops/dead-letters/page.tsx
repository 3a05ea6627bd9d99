import type { Metadata } from "next";
import { notFound } from "next/navigation";
import { DeadLettersPanel } from "@/components/dead-letters-panel";
import { sessionPrincipal } from "@/lib/http/principal";

export const metadata: Metadata = { title: "Dead letters" };

export default async function DeadLettersPage() {
  const principal = await sessionPrincipal();
  if (!principal || (!principal.isPlatformAdmin && principal.role !== "operator")) notFound();
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
