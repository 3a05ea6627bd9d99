/**
 * The worker process: one graphile-worker pool running Conveyor's jobs.
 *   npm run worker -- [--queues interactive,bulk] [--concurrency 4]
 * The pool serves the named queues (they share its slots). It registers in the
 * worker registry and heartbeats, runs the reaper and an admitter, and on
 * SIGTERM/SIGINT stops taking work, lets running jobs finish within
 * WORKER_SHUTDOWN_GRACE_MS, then aborts them (handed back at once). Started with an
 * IPC channel (npm start, the harnesses), it does the same when its parent is gone.
 */
import { EventEmitter } from "node:events";
import { parseArgs } from "node:util";
import { run, type WorkerEvents } from "graphile-worker";
import { Admitter, describeQueueSeed, seedQueueSettings } from "@/lib/admission/admitter";
import { closeDb } from "@/lib/db";
import { directDatabaseUrl, env, resetEnvCache } from "@/lib/env";
import { logger } from "@/lib/log";
import { followParent } from "@/lib/parent";
import { reap } from "@/lib/jobs/reaper";
import { checkSettings, queueNames, workloadServices } from "@/lib/jobs/registry";
import { heartbeatWorker, markWorkerStopped, registerWorker } from "@/lib/jobs/workers";
import { rollupStats } from "@/lib/ops/stats";
import { pruneOnce, rowsOf } from "@/lib/retention/prune";
import { serviceContext, type Service } from "@/lib/runtime/service";
import { initTracing, shutdownTracing } from "@/lib/tracing";
import { graphileLogger } from "./graphile-logger";
import { workerIdentity } from "./identity";
import { taskListFor } from "./task-list";

/** The engine's upkeep on a timer (lib/runtime's services take it over). */
type PeriodicTask = { name: string; everyMs(): number; run(): Promise<string[]> };

/** This process's lines (not its jobs': the runner logs those with the job's fields). */
const log = logger.child({ workerId: workerIdentity.id });

// graphile-worker 0.17 can throw from its batched job completion when its
// connection is terminated under it. Log it plainly and exit: the fleet reaps
// this worker's jobs, and `npm start` starts a new worker.
for (const event of ["uncaughtException", "unhandledRejection"] as const) {
  process.on(event, (err: unknown) => {
    log.fatal({ err }, `[worker] fatal (${event}): ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  });
}

/** Whether the parent is gone; before the runner is up, noted only (main stops once it is). */
let parentGone = false;
let onParentGone = () => {};
followParent(() => {
  parentGone = true;
  onParentGone();
});

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { concurrency: { type: "string" }, queues: { type: "string" } } });
  const concurrency = values.concurrency ? Number(values.concurrency) : env().WORKER_CONCURRENCY;
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 64) {
    throw new Error(`--concurrency must be an integer from 1 to 64 (got ${values.concurrency})`);
  }
  // The process's connection pools are sized by its concurrency (lib/db.ts reads WORKER_CONCURRENCY).
  if (concurrency !== env().WORKER_CONCURRENCY) {
    process.env.WORKER_CONCURRENCY = String(concurrency);
    resetEnvCache();
  }
  // Every workload's settings, validated before anything starts: a bad variable is named now.
  checkSettings();
  const queues = (values.queues ?? env().WORKER_QUEUES ?? queueNames().join(","))
    .split(",")
    .map((q) => q.trim())
    .filter(Boolean);
  const unknown = queues.filter((q) => !queueNames().includes(q));
  if (!queues.length || unknown.length) {
    throw new Error(
      `--queues must name some of: ${queueNames().join(", ")} (got ${values.queues ?? env().WORKER_QUEUES})`,
    );
  }
  // Before any job runs: each attempt's span continues the trace stored with its job (OTEL_EXPORTER_OTLP_ENDPOINT).
  if (await initTracing({ serviceName: "conveyor-worker" })) log.info("[worker] tracing: exporting spans over OTLP");
  const taskList = taskListFor(queues);
  const id = workerIdentity.id;
  // A worker that `npm start` restarted says so in the registry (and so on the console's Workers page).
  const restarts = env().CONVEYOR_WORKER_RESTARTS;
  const previousExit = env().CONVEYOR_WORKER_LAST_EXIT ?? null;
  await registerWorker({ id, queues, concurrency, restarts, previousExit });
  // Caps and windows are the fleet's, in the database: the environment only seeds a new one.
  describeQueueSeed(await seedQueueSettings()).forEach((line) => log.info(line));
  // Every worker admits for every queue: admission only hands jobs to graphile.
  const admitter = new Admitter((line) => log.warn(line));
  await admitter.start();
  // Every registered workload's services (the schedules' scheduler: no leader to lose; cleanups…).
  const services: Service[] = workloadServices();
  for (const s of services) await s.start(serviceContext(id, s.name));

  // graphile's own worker ids, so the reaper can release their locks if this process dies.
  const graphileIds = new Set<string>();
  const events: WorkerEvents = new EventEmitter();
  // graphile 0.17 locks jobs in the pool's name; record worker ids too, for older or newer versions.
  events.on("pool:create", ({ workerPool }) => {
    graphileIds.add(workerPool.id);
    // At once, not at the next heartbeat: the pool fetches its local queue right away, and a
    // worker killed before its ids are known leaves locks only the reaper's stale-lock pass frees.
    beatNow();
  });
  events.on("worker:create", ({ worker }) => graphileIds.add(worker.workerId));

  let state: "running" | "stopping" = "running";
  const beat = async () => {
    const alive = await heartbeatWorker(id, [...graphileIds], state);
    if (!alive) {
      // Declared dead (e.g. paused past WORKER_DEAD_AFTER_MS): its jobs were handed
      // to others and its attempts are fenced off. Start over as a new worker.
      log.error(`[worker] ${id} was declared dead by the fleet; exiting so it can be restarted`);
      process.exit(3);
    }
  };
  const beatNow = () =>
    void beat().catch((e: Error) => log.warn({ err: e }, `[worker] heartbeat failed: ${e.message}`));
  const heartbeat = setInterval(beatNow, env().WORKER_HEARTBEAT_MS);
  // Periodic upkeep: the engine's reaper, the console's statistics rollup, the pruner, and each
  // workload's own (export expiry…). Each takes a maintenance lock: one process works a tick.
  const reaperTask: PeriodicTask = {
    name: "reaper",
    everyMs: () => env().REAPER_INTERVAL_MS,
    async run() {
      const r = await reap({ deadAfterMs: env().WORKER_DEAD_AFTER_MS, selfId: id });
      return [
        ...(r.deadWorkers.length ? [`declared dead: ${r.deadWorkers.join(", ")}`] : []),
        ...r.reapedJobs.map((j) => `job ${j.id} (lease of ${j.previousOwner}) → ${j.status}`),
        ...r.redispatched.map((j) => `job ${j} had lost its dispatch; dispatched again`),
      ];
    },
  };
  const periodic: PeriodicTask[] = [
    reaperTask,
    {
      // The console overview's counts and per-minute statistics.
      name: "stats",
      everyMs: () => env().STATS_ROLLUP_MS,
      async run() {
        await rollupStats();
        return [];
      },
    },
    {
      // Retention: old finished jobs, dead letters, audit entries, dead worker rows (lib/retention).
      name: "prune",
      everyMs: () => env().PRUNE_INTERVAL_MS,
      async run() {
        const r = await pruneOnce();
        const trees = r.batches.reduce((n, b) => n + b.trees, 0);
        const rows = r.batches.reduce((n, b) => n + rowsOf(b), 0);
        return rows ? [`pruned ${trees} job trees, ${rows} rows in ${r.batches.length} batches`] : [];
      },
    },
  ];
  const runTask = (task: PeriodicTask) =>
    task
      .run()
      .then((lines) => lines.forEach((line) => log.info({ task: task.name }, `[${task.name}] ${line}`)))
      .catch((e: Error) => log.error({ err: e, task: task.name }, `[${task.name}] failed: ${e.message}`));
  const timers = periodic.map((task) => setInterval(() => void runTask(task), task.everyMs()));

  const runner = await run({
    // graphile-worker LISTENs for new jobs: a direct connection (docs/DEPLOY.md, PgBouncer).
    connectionString: directDatabaseUrl(),
    concurrency,
    // Capped like lib/db.ts's pools: npm start's processes share one server's connections.
    maxPoolSize: Math.max(10, Math.min(16, concurrency + 2)),
    taskList,
    events,
    logger: graphileLogger(log),
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
  await beat();
  // A worker started in place of one that died (npm start's restart) reaps at once rather than a
  // tick later: the jobs of a worker seen to exit are runnable as soon as someone reaps.
  void runTask(reaperTask);
  log.info(
    { queues, concurrency, restarts },
    `[worker] ${id} started: queues ${queues.join(", ")}, concurrency ${concurrency}, tasks ${Object.keys(taskList).join(", ")}` +
      (restarts ? ` (restart ${restarts}; the previous worker ended: ${previousExit ?? "unknown"})` : ""),
  );

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) {
      log.warn(`[worker] ${signal} again: exiting now`);
      process.exit(1);
    }
    stopping = true;
    state = "stopping";
    timers.forEach(clearInterval);
    void admitter.stop();
    for (const s of [...services].reverse()) void s.stop();
    log.info(`[worker] ${signal}: finishing running jobs (grace ${env().WORKER_SHUTDOWN_GRACE_MS} ms)`);
    // The cleanup below waits on the database (the last attempts' writes, the pool's end). A stuck
    // connection must not keep a stopping worker alive for ever: what it held is taken back by the
    // reaper when its lease runs out, as after a crash.
    setTimeout(() => {
      log.error("[worker] cleanup did not finish within the grace and 5 s more: exiting now");
      process.exit(1);
    }, env().WORKER_SHUTDOWN_GRACE_MS + 5_000).unref();
    runner
      .stop()
      .catch((e: Error) => log.error({ err: e }, `[worker] stop failed: ${e.message}`))
      .then(() => {
        clearInterval(heartbeat);
        return markWorkerStopped(id);
      })
      .then(() => closeDb())
      // The last attempts' spans, still in the batch, go out before the process does.
      .then(() => shutdownTracing())
      .catch((e: Error) => log.error({ err: e }, `[worker] cleanup failed: ${e.message}`))
      .finally(() => {
        log.info("[worker] stopped");
        process.exit(0);
      });
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
  // Started by npm start's supervisor (or a harness) with an IPC channel: its death, however it
  // happens, stops this worker as a SIGTERM would (the reaper covers what the grace cannot finish).
  onParentGone = () => stop("parent gone");
  if (parentGone) onParentGone();
  await runner.promise;
}

main().catch((err: Error) => {
  log.fatal({ err }, `[worker] fatal: ${err.message}`);
  process.exit(1);
});
