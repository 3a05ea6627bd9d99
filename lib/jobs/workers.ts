/**
 * The worker registry: every worker process registers, heartbeats, and is
 * declared dead when its heartbeat stops; its jobs are then reaped at once.
 */
import { hostname } from "node:os";
import { db } from "../db";

export const WORKER_VERSION = "0.1.0";

export type WorkerRegistration = { id: string; queues: string[]; concurrency: number };

/** Registers this process. */
export async function registerWorker(w: WorkerRegistration): Promise<void> {
  await db().worker.create({
    data: {
      id: w.id,
      host: hostname(),
      pid: process.pid,
      version: WORKER_VERSION,
      queues: w.queues,
      concurrency: w.concurrency,
      graphileWorkerIds: [],
      state: "running",
    },
  });
}

/** Records that this process is alive (and which graphile workers it runs). False if it was declared dead. */
export async function heartbeatWorker(
  id: string,
  graphileWorkerIds: string[],
  state: "running" | "stopping" = "running",
): Promise<boolean> {
  const { count } = await db().worker.updateMany({
    where: { id, state: { in: ["running", "stopping"] } },
    data: { heartbeatAt: new Date(), graphileWorkerIds, state },
  });
  return count === 1;
}

/** Marks this process stopped (graceful shutdown completed). */
export async function markWorkerStopped(id: string): Promise<void> {
  await db().worker.updateMany({ where: { id }, data: { state: "stopped", stoppedAt: new Date() } });
}
