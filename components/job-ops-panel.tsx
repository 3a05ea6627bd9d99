"use client";

import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { fetchOpsJob } from "@/lib/client/api";
import { formatTime } from "@/lib/client/format";
import { isTerminal } from "@/lib/jobs/dto";
import { StatusBadge } from "./ui/status-badge";

const card = "rounded-lg border border-slate-200 bg-white p-5 shadow-sm";

/**
 * What operators see beyond the job itself: its parts (child jobs) and every
 * operator action taken on it.
 */
export function JobOpsPanel({ jobId, status, attempts }: { jobId: string; status: string; attempts: number }) {
  // Refetched when the job changes state, not on every progress write.
  const { data, error } = useQuery({
    queryKey: ["ops-job", jobId, status, attempts],
    queryFn: () => fetchOpsJob(jobId),
    // Parts move on their own while the job waits for them.
    refetchInterval: (q) => (q.state.data?.parts.some((p) => !isTerminal(p.status)) ? 3_000 : false),
  });
  if (error)
    return (
      <p role="alert" className="text-sm text-red-700">
        {error.message}
      </p>
    );
  if (!data) return null;
  return (
    <>
      {data.parts.length > 0 && (
        <section aria-label="Parts" className={card}>
          <h2 className="mb-3 font-semibold">Parts ({data.parts.length})</h2>
          <ul className="grid grid-cols-2 gap-2 text-sm md:grid-cols-4">
            {data.parts.map((part, i) => (
              <li key={part.id} data-testid="job-part" className="rounded border border-slate-100 px-2 py-1">
                <Link href={`/jobs/${part.id}`} className="text-indigo-700 underline">
                  Part {i + 1}
                </Link>{" "}
                <StatusBadge status={part.status} />
              </li>
            ))}
          </ul>
        </section>
      )}
      <section aria-label="Operator actions" className={card}>
        <h2 className="mb-3 font-semibold">Operator actions</h2>
        {data.audit.length === 0 ? (
          <p className="text-sm text-slate-500">No operator has acted on this job.</p>
        ) : (
          <ul className="space-y-1 text-sm">
            {data.audit.map((a) => (
              <li key={a.id} data-testid="job-audit-entry">
                <span className="text-slate-500">{formatTime(a.at)}</span>{" "}
                <span className="font-medium">{a.action}</span> by {a.actor ?? "a deleted user"}
              </li>
            ))}
          </ul>
        )}
      </section>
    </>
  );
}
