/** The worker pools `npm start` runs (scripts/supervisor.ts), from the registered queues. */
import { env } from "@/lib/env";
import { queues } from "@/lib/jobs/registry";
import "@/lib/workloads";

export type WorkerPool = { queues: string; concurrency: number };

/**
 * The default fleet: one pool per queue (the engine's and those the workloads' manifests
 * bring), so a flood of bulk work never takes the slots of a user who is waiting, and a
 * slow webhook endpoint never takes an export's. Each is WORKER_CONCURRENCY wide unless its
 * queue says otherwise (webhooks: WEBHOOK_CONCURRENCY, deliveries mostly wait on the network).
 */
export function workerPools(): WorkerPool[] {
  return queues().map((q) => ({ queues: q.name, concurrency: q.concurrency?.() ?? env().WORKER_CONCURRENCY }));
}
