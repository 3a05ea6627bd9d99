import type { Metadata } from "next";
import { Suspense } from "react";
import { JobHistory } from "@/components/job-history";

export const metadata: Metadata = { title: "My jobs" };

/**
 * Your own jobs of every kind, newest first: what you requested, your schedules' runs and the
 * deliveries to your webhooks. Filters in the URL (?kind=&status=&source=&from=&to=); operators
 * see every job of the tenant in the console's Jobs explorer.
 */
export default function JobHistoryPage() {
  return (
    <div className="space-y-6">
      <div>
        <h1 className="text-2xl font-semibold">My jobs</h1>
        <p className="text-sm text-slate-600">
          Everything you started, of every kind: exports, imports, reports, your schedules&apos; runs and the deliveries
          to your webhooks.
        </p>
      </div>
      <Suspense fallback={<p className="text-sm text-slate-500">Loading your jobs…</p>}>
        <JobHistory />
      </Suspense>
    </div>
  );
}
