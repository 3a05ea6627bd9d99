import { setMaxListeners } from "node:events";
import type { Task } from "graphile-worker";
import { runJob } from "@/lib/jobs/runner";
import { workerIdentity } from "./identity";

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
    // Every running job listens on the pool's one shutdown signal: more than
    // Node's default of 10 listeners is expected, not a leak.
    setMaxListeners(0, helpers.abortSignal);
    await runJob(jobId, {
      workerId: workerIdentity.id,
      type,
      signal: helpers.abortSignal,
    });
  };
}
