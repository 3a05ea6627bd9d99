"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useRouter } from "next/navigation";
import { cancelJob, jobKeys, replayJob, type JobDto } from "@/lib/client/api";
import { isTerminal } from "@/lib/jobs/dto";

/** Cancel (anyone of the tenant, while the job is not finished) and replay (operators, dead jobs). */
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
  const canCancel = !isTerminal(job.status);
  const canReplay = canOperate && (job.status === "failed" || job.status === "cancelled");
  if (!canCancel && !canReplay) return null;
  const error = cancel.error ?? replay.error;
  return (
    <div className="flex items-center gap-3">
      {canCancel && (
        <button
          type="button"
          onClick={() => cancel.mutate()}
          disabled={cancel.isPending || job.progress.message?.includes("stopping") === true}
          className="rounded border border-red-300 bg-white px-3 py-1.5 text-sm font-medium text-red-700 hover:bg-red-50 disabled:opacity-50"
        >
          {cancel.isPending ? "Cancelling…" : "Cancel job"}
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
      {error && (
        <span role="alert" className="text-sm text-red-700">
          {error.message}
        </span>
      )}
    </div>
  );
}
