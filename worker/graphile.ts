/**
 * graphile-worker's pool as the worker's last service: started once every other
 * service is up, stopped first (it lets running jobs finish within
 * WORKER_SHUTDOWN_GRACE_MS, then aborts them: they are handed back at once).
 */
import { EventEmitter } from "node:events";
import { run, type Runner, type WorkerEvents } from "graphile-worker";
import { directDatabaseUrl, env } from "@/lib/env";
import type { QueueName } from "@/lib/jobs/task";
import type { Logger } from "@/lib/log";
import type { Service } from "@/lib/runtime/service";
import { graphileLogger } from "./graphile-logger";
import type { Heartbeat } from "./heartbeat";
import { taskListFor } from "./task-list";

export class GraphilePool implements Service {
  readonly name = "graphile";
  private runner: Runner | null = null;
  /** Settles when the pool ends (rejects if it fails). */
  done: Promise<void> = new Promise(() => {});

  constructor(private readonly opts: { queues: string[]; concurrency: number; heartbeat: Heartbeat; log: Logger }) {}

  /** The task identifiers the pool serves, for the start line. */
  tasks(): string[] {
    return Object.keys(taskListFor(this.opts.queues as QueueName[]));
  }

  async start(): Promise<void> {
    const { concurrency, heartbeat } = this.opts;
    const events: WorkerEvents = new EventEmitter();
    // graphile locks jobs in the pool's name; record worker ids too, for older or newer versions.
    events.on("pool:create", ({ workerPool }) => {
      heartbeat.graphileIds.add(workerPool.id);
      // At once, not at the next heartbeat: the pool fetches its local queue right away, and a
      // worker killed before its ids are known leaves locks only the reaper's stale-lock pass frees.
      heartbeat.beatNow();
    });
    events.on("worker:create", ({ worker }) => heartbeat.graphileIds.add(worker.workerId));
    this.runner = await run({
      // graphile-worker LISTENs for new jobs: a direct connection (docs/DEPLOY.md, PgBouncer).
      connectionString: directDatabaseUrl(),
      concurrency,
      // Capped like lib/db.ts's pools: npm start's processes share one server's connections.
      maxPoolSize: Math.max(10, Math.min(16, concurrency + 2)),
      taskList: taskListFor(this.opts.queues as QueueName[]),
      events,
      logger: graphileLogger(this.opts.log),
      noHandleSignals: true,
      pollInterval: 2_000,
      // No graphile cron: scheduling belongs to Conveyor's own job table.
      parsedCronItems: [],
      gracefulShutdownAbortTimeout: env().WORKER_SHUTDOWN_GRACE_MS,
      // graphile-worker's own batching (its performance guide): the pool fetches up to `concurrency`
      // admitted jobs in one query, and marks finished ones done in one. Admission bounds what there is
      // to fetch, and a job held locally when a worker dies is released by the reaper with its locks.
      preset: { worker: { localQueue: { size: concurrency }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } },
    });
    this.done = this.runner.promise;
    await heartbeat.beat();
  }

  async stop(): Promise<void> {
    await this.runner?.stop();
  }
}
