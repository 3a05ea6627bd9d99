/**
 * The worker process: graphile-worker dispatching Conveyor's jobs.
 *   npm run worker -- [--concurrency 4]
 * SIGTERM/SIGINT: stop taking work, let running jobs finish within
 * WORKER_SHUTDOWN_GRACE_MS, then abort them (they are handed back for retry).
 */
import { parseArgs } from "node:util";
import { run } from "graphile-worker";
import { closeDb } from "@/lib/db";
import { databaseUrl, env } from "@/lib/env";
import { workerIdentity } from "./identity";
import { taskList } from "./tasks";

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { concurrency: { type: "string" } } });
  const concurrency = values.concurrency ? Number(values.concurrency) : env().WORKER_CONCURRENCY;
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 64) {
    throw new Error(`--concurrency must be an integer from 1 to 64 (got ${values.concurrency})`);
  }
  const runner = await run({
    connectionString: databaseUrl(),
    concurrency,
    taskList,
    noHandleSignals: true,
    // No graphile cron: scheduling belongs to Conveyor's own job table.
    parsedCronItems: [],
    pollInterval: 2_000,
    gracefulShutdownAbortTimeout: env().WORKER_SHUTDOWN_GRACE_MS,
  });
  console.log(
    `[worker] ${workerIdentity.id} started: concurrency ${concurrency}, tasks ${Object.keys(taskList).join(", ")}`,
  );

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) {
      console.log(`[worker] ${signal} again: exiting now`);
      process.exit(1);
    }
    stopping = true;
    console.log(`[worker] ${signal}: finishing running jobs (grace ${env().WORKER_SHUTDOWN_GRACE_MS} ms)`);
    runner
      .stop()
      .catch((e: Error) => console.error(`[worker] stop failed: ${e.message}`))
      .then(() => closeDb())
      .finally(() => {
        console.log("[worker] stopped");
        process.exit(0);
      });
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
  await runner.promise;
}

main().catch((err: Error) => {
  console.error(`[worker] fatal: ${err.stack ?? err.message}`);
  process.exit(1);
});
