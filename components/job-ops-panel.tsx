"use client";

import { useQuery } from "@tanstack/react-query";
import { fetchOpsJob } from "@/lib/client/api";
import { Time } from "./ui/time";
import { Alert } from "./ui/alert";

const card = "rounded-lg border border-slate-200 bg-white p-5 shadow-sm";

/**
 * What operators see beyond the job itself: every operator action taken on it.
 */
export function JobOpsPanel({
  jobId,
  status,
  attempts,
  replayOfId = null,
}: {
  jobId: string;
  status: string;
  attempts: number;
  replayOfId?: string | null;
}) {
  // Refetched when the job changes state, not on every progress write.
  const { data, error } = useQuery({
    queryKey: ["ops-job", jobId, status, attempts],
    queryFn: () => fetchOpsJob(jobId),
  });
  if (error) return <Alert tone="error">{error.message}</Alert>;
  if (!data) return null;
  return (
    <>
      <section aria-label="Operator actions" className={card}>
        <h2 className="mb-3 font-semibold">Operator actions</h2>
        {data.audit.length === 0 ? (
          <p className="text-sm text-slate-500">No operator has acted on this job.</p>
        ) : (
          <ul className="space-y-1 text-sm">
            {data.audit.map((a) => (
              <li key={a.id} data-testid="job-audit-entry">
                <span className="text-slate-500">
                  <Time iso={a.at} />
                </span>{" "}
                <span className="font-medium">{a.action}</span> by {a.actor ?? "a deleted user"}
                {replayOfId && a.action.endsWith("replay") ? " (on the job this one replays)" : ""}
              </li>
            ))}
          </ul>
        )}
      </section>
    </>
  );
}
