/**
 * The worker process: one graphile-worker pool running Conveyor's jobs.
 *   npm run worker -- [--queues interactive,bulk] [--concurrency 4]
 * The pool serves the named queues (they share its slots). Besides it the process
 * runs its services (worker/services.ts: registration and heartbeat, admission,
 * the reaper, upkeep, the scheduler, the workloads'), started in order and stopped
 * in reverse; worker/lifecycle.ts says how it stops.
 */
import { parseArgs } from "node:util";
import { env, MAX_CONCURRENCY, resetEnvCache } from "@/lib/env";
import { settleStatements } from "@/lib/pooler";
import { logger } from "@/lib/log";
import { checkSettings, queueNames, workloadServices } from "@/lib/jobs/registry";
import { ServiceRunner } from "@/lib/runtime/runner";
import { initTracing } from "@/lib/tracing";
import { GraphilePool } from "./graphile";
import { Heartbeat } from "./heartbeat";
import { workerIdentity } from "./identity";
import { stopOnSignal, watchProcess } from "./lifecycle";
import { engineServices } from "./services";

/** This process's lines (not its jobs': the runner logs those with the job's fields). */
const log = logger.child({ workerId: workerIdentity.id });
watchProcess(log);

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { concurrency: { type: "string" }, queues: { type: "string" } } });
  const concurrency = values.concurrency ? Number(values.concurrency) : env().WORKER_CONCURRENCY;
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > MAX_CONCURRENCY) {
    throw new Error(`--concurrency must be an integer from 1 to ${MAX_CONCURRENCY} (got ${values.concurrency})`);
  }
  // The process's connection pools are sized by its concurrency (lib/db.ts reads WORKER_CONCURRENCY).
  if (concurrency !== env().WORKER_CONCURRENCY) {
    process.env.WORKER_CONCURRENCY = String(concurrency);
    resetEnvCache();
  }
  // Every workload's settings, validated before anything starts: a bad variable is named now.
  checkSettings();
  // Direct or through a pooler: decides prepared statements and the bookkeeping pool's options, or
  // refuses a configuration that would fail later (lib/pooler.ts).
  log.info((await settleStatements()).line);
  const given = values.queues ?? env().WORKER_QUEUES ?? queueNames().join(",");
  const queues = given
    .split(",")
    .map((q) => q.trim())
    .filter(Boolean);
  if (!queues.length || queues.some((q) => !queueNames().includes(q))) {
    throw new Error(`--queues must name some of: ${queueNames().join(", ")} (got ${given})`);
  }
  // Before any job runs: each attempt's span continues the trace stored with its job (OTEL_EXPORTER_OTLP_ENDPOINT).
  if (await initTracing({ serviceName: "conveyor-worker" })) log.info("[worker] tracing: exporting spans over OTLP");
  const id = workerIdentity.id;
  // A worker that `npm start` restarted says so in the registry (and so on the console's Workers page).
  const restarts = env().CONVEYOR_WORKER_RESTARTS;
  const previousExit = env().CONVEYOR_WORKER_LAST_EXIT ?? null;
  const heartbeat = new Heartbeat({ id, queues, concurrency, restarts, previousExit });
  const pool = new GraphilePool({ queues, concurrency, heartbeat, log });
  const services = new ServiceRunner([...engineServices(heartbeat), ...workloadServices(), pool], {
    workerId: id,
    log,
  });
  await services.start();
  log.info(
    { queues, concurrency, restarts },
    `[worker] ${id} started: queues ${queues.join(", ")}, concurrency ${concurrency}, tasks ${pool.tasks().join(", ")}` +
      (restarts ? ` (restart ${restarts}; the previous worker ended: ${previousExit ?? "unknown"})` : ""),
  );
  stopOnSignal({ log, services, stopping: () => heartbeat.stopping() });
  await pool.done;
}

main().catch((err: Error) => {
  log.fatal({ err }, `[worker] fatal: ${err.message}`);
  process.exit(1);
});
