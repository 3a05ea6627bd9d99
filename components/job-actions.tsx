"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useRouter } from "next/navigation";
import { cancelJob, jobKeys, replayJob, runJobAction, type JobDto } from "@/lib/client/api";
import { isTerminal } from "@/lib/jobs/dto";

/**
 * Cancel (anyone of the tenant, while the job is not finished); for operators, replay (dead
 * jobs), retry now (a retry waiting for its backoff) and discard (out of the dead-letter queue).
 */
export function JobActions({ job, canOperate }: { job: JobDto; canOperate: boolean }) {
  const qc = useQueryClient();
  const router = useRouter();
  const cancel = useMutation({
    mutationFn: () => cancelJob(job.id),
    onSuccess: (updated) => {
      qc.setQueryData(jobKeys.detail(job.id), (old: JobDto | undefined) =>
        old && old.seq > updated.seq ? old : updated,
      );
      void qc.invalidateQueries({ queryKey: jobKeys.lists() });
    },
  });
  const replay = useMutation({
    mutationFn: () => replayJob(job.id),
    onSuccess: (created) => router.push(`/jobs/${created.id}`),
  });
  // Operators' one-job console actions (the same route as the explorer's bulk actions).
  const single = useMutation({
    mutationFn: (action: "retry_now" | "discard") => runJobAction({ action, ids: [job.id] }),
    onSuccess: () => void qc.invalidateQueries({ queryKey: jobKeys.all }),
  });
  const canCancel = !isTerminal(job.status);
  const canReplay = canOperate && (job.status === "failed" || job.status === "cancelled");
  const canRetryNow = canOperate && job.status === "retrying" && job.admission !== "admitted";
  const canDiscard = canOperate && job.status === "failed";
  if (!canCancel && !canReplay && !canRetryNow && !canDiscard) return null;
  const error = cancel.error ?? replay.error ?? single.error;
  return (
    <div className="flex items-center gap-3">
      {canCancel && (
        <button
          type="button"
          onClick={() => cancel.mutate()}
          disabled={cancel.isPending || job.cancelRequested !== null}
          className="rounded border border-red-300 bg-white px-3 py-1.5 text-sm font-medium text-red-700 hover:bg-red-50 disabled:opacity-50"
        >
          {cancel.isPending ? "Cancelling…" : job.cancelRequested ? "Stopping…" : "Cancel job"}
        </button>
      )}
      {canReplay && (
        <button
          type="button"
          onClick={() => replay.mutate()}
          disabled={replay.isPending}
          className="rounded bg-indigo-600 px-3 py-1.5 text-sm font-medium text-white hover:bg-indigo-500 disabled:opacity-50"
        >
          {replay.isPending ? "Replaying…" : "Replay job"}
        </button>
      )}
      {canRetryNow && (
        <button
          type="button"
          onClick={() => single.mutate("retry_now")}
          disabled={single.isPending}
          className="rounded border border-slate-300 bg-white px-3 py-1.5 text-sm font-medium text-slate-700 hover:bg-slate-50 disabled:opacity-50"
        >
          Retry now
        </button>
      )}
      {canDiscard && (
        <button
          type="button"
          onClick={() => {
            if (window.confirm("Discard this job from the dead-letter queue? Its history stays."))
              single.mutate("discard");
          }}
          disabled={single.isPending}
          className="rounded border border-slate-300 bg-white px-3 py-1.5 text-sm font-medium text-slate-700 hover:bg-slate-50 disabled:opacity-50"
        >
          Discard
        </button>
      )}
      {single.isSuccess && (
        <span role="status" className="text-sm text-emerald-700">
          {single.data.affected ? "Done." : "Nothing to do: the job moved on."}
        </span>
      )}
      {error && (
        <span role="alert" className="text-sm text-red-700">
          {error.message}
        </span>
      )}
    </div>
  );
}
