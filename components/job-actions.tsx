"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import { refetchAfterChange } from "@/lib/client/refresh";
import { useRouter } from "next/navigation";
import { ApiError, cancelJob, jobKeys, replayJob, runJobAction, type JobDto } from "@/lib/client/api";
import { kindOf } from "@/lib/client/kinds/lookup";
import { isTerminal } from "@/lib/jobs/dto";
import { Alert } from "./ui/alert";
import { Button } from "./ui/button";
import { useConfirm } from "./ui/confirm-dialog";

/**
 * Cancel (anyone of the tenant, while the job is not finished); for operators, replay (dead
 * jobs), retry now (a retry waiting for its backoff) and discard (out of the dead-letter queue).
 */
export function JobActions({ job, canOperate }: { job: JobDto; canOperate: boolean }) {
  const qc = useQueryClient();
  const router = useRouter();
  const { confirm, dialog } = useConfirm();
  const cancel = useMutation({
    mutationFn: (reason?: string) => cancelJob(job.id, reason),
    onSuccess: (updated) => {
      // (An older answer than the stream's latest is dropped by the job query's defaults.)
      qc.setQueryData(jobKeys.detail(job.id), updated);
      void refetchAfterChange(qc, jobKeys.lists());
    },
  });
  const replay = useMutation({
    mutationFn: () => replayJob(job.id),
    onSuccess: (created) => router.push(`/jobs/${created.id}`),
  });
  // Operators' one-job console actions (the same route as the explorer's bulk actions).
  const single = useMutation({
    mutationFn: (action: "retry_now" | "discard") => runJobAction({ action, ids: [job.id] }),
    onSuccess: () => void refetchAfterChange(qc, jobKeys.all),
  });
  const canCancel = !isTerminal(job.status);
  const canReplay = canOperate && (job.status === "failed" || job.status === "cancelled");
  const canRetryNow = canOperate && job.status === "retrying" && job.admission !== "admitted";
  const canDiscard = canOperate && job.status === "failed";
  if (!canCancel && !canReplay && !canRetryNow && !canDiscard) return null;
  // What a replay does for this kind of job ("Repair 2 dead parts" for a split export).
  const replayLabel = kindOf(job.type)?.entry.replayLabel?.(job) ?? "Replay job";
  const error = cancel.error ?? replay.error ?? single.error;
  return (
    <div className="flex flex-wrap items-center gap-3">
      {dialog}
      {canCancel && (
        <Button
          variant="danger"
          onClick={async () => {
            const answer = await confirm({
              title: "Cancel this job?",
              message:
                job.status === "running"
                  ? "It stops within a second; what it wrote so far is discarded. This cannot be undone."
                  : "It will not start. This cannot be undone.",
              confirmLabel: "Cancel job",
              variant: "danger",
              reason: { label: "Reason" },
            });
            if (answer) cancel.mutate(answer.reason);
          }}
          disabled={cancel.isPending || job.cancelRequested !== null}
        >
          {cancel.isPending ? "Cancelling…" : job.cancelRequested ? "Stopping…" : "Cancel job"}
        </Button>
      )}
      {canReplay && (
        <Button variant="primary" onClick={() => replay.mutate()} disabled={replay.isPending}>
          {replay.isPending ? "Replaying…" : replayLabel}
        </Button>
      )}
      {canRetryNow && (
        <Button onClick={() => single.mutate("retry_now")} disabled={single.isPending}>
          Retry now
        </Button>
      )}
      {canDiscard && (
        <Button
          onClick={async () => {
            const ok = await confirm({
              title: "Discard this job?",
              message: "Discard this job from the dead-letter queue? Its history stays.",
              confirmLabel: "Discard",
              variant: "danger",
            });
            if (ok) single.mutate("discard");
          }}
          disabled={single.isPending}
        >
          Discard
        </Button>
      )}
      {single.isSuccess && (
        <Alert tone={single.data.affected ? "success" : "neutral"} inline>
          {single.data.affected ? "Done." : "Nothing to do: the job moved on."}
        </Alert>
      )}
      {error &&
        // A conflict (the job moved on: it finished, or was replayed already) changed nothing: said plainly, not as a failure.
        (error instanceof ApiError && error.status === 409 ? (
          <Alert tone="neutral" inline>
            Nothing changed: {error.message}
          </Alert>
        ) : (
          <Alert tone="error" inline>
            {error.message}
          </Alert>
        ))}
    </div>
  );
}
