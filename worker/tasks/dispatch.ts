import type { Task } from "graphile-worker";
import { runJob } from "@/lib/jobs/runner";
import { workerIdentity } from "../identity";

/**
 * A graphile-worker task that runs our job record: the payload is only the
 * job id, everything else lives in our `jobs` table.
 */
export function dispatchToRunner(type: string): Task {
  return async (payload, helpers) => {
    const jobId = (payload as { jobId?: unknown } | null)?.jobId;
    if (typeof jobId !== "string") {
      helpers.logger.error(`[task:${type}] graphile job ${helpers.job.id} has no jobId; dropped`);
      return;
    }
    await runJob(jobId, {
      workerId: workerIdentity.id,
      type,
      signal: helpers.abortSignal,
      log: (line) => helpers.logger.info(line),
    });
  };
}
