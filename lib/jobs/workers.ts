/**
 * The worker registry: every worker process registers, heartbeats, and is
 * declared dead when its heartbeat stops (its jobs are reaped when their leases
 * run out: it may only be stalled), or at once when the process that started it
 * saw it exit (`recordWorkerExit`: its jobs are reaped at once).
 */
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { db, pool } from "../db";
import { recordWorkerExited } from "./sql/worker-exited";

export const WORKER_VERSION = "0.1.0";

/** A worker process's identity, recorded on leases and attempts: `host:pid:random`. */
export function makeWorkerId(): string {
  return `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
}

export type WorkerRegistration = {
  id: string;
  queues: string[];
  concurrency: number;
  /** Set when `npm start` restarted the pool: how many times so far, and how the previous worker ended. */
  restarts?: number;
  previousExit?: string | null;
};

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
      restarts: w.restarts ?? 0,
      previousExit: w.previousExit ?? null,
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
  // The database's clock, like the reaper's that reads it.
  const count = await db().$executeRaw`
    UPDATE workers SET heartbeat_at = now(), graphile_worker_ids = ${graphileWorkerIds}::text[], state = ${state}
    WHERE id = ${id} AND state IN ('running', 'stopping')`;
  return count === 1;
}

/** Marks this process stopped (graceful shutdown completed). */
export async function markWorkerStopped(id: string): Promise<void> {
  await db().$executeRaw`UPDATE workers SET state = 'stopped', stopped_at = now() WHERE id = ${id}`;
}

/**
 * Records that the worker process `pid` of this host is gone, for its parent
 * (npm start's supervisor, a harness) that saw it exit; `exit` says how
 * (`SIGKILL`, `code 1`: restart-backoff's describeExit). Returns the ids of the
 * registry rows marked (none when it had stopped cleanly or never registered).
 */
export async function recordWorkerExit(pid: number, exit: string): Promise<string[]> {
  return recordWorkerExited(pool(), { host: hostname(), pid, exit });
}
