/**
 * How a worker process ends. A fatal error logs and exits 1 (the fleet reaps its
 * jobs; `npm start` starts a new worker). SIGTERM, SIGINT, or its parent gone
 * (started with an IPC channel by `npm start` or a harness: the channel closes
 * however the parent ends) stop it: its services stop in reverse order —
 * graphile's pool first, which lets running jobs finish within
 * WORKER_SHUTDOWN_GRACE_MS and then hands them back — then the notifier, the
 * database pools and the tracing exporter, and it exits 0. A second signal, or a
 * cleanup stuck past the grace and 5 s more, exits at once (the reaper takes
 * back what it held when its lease runs out, as after a crash).
 */
import { closeDb } from "@/lib/db";
import { env } from "@/lib/env";
import type { Logger } from "@/lib/log";
import { followParent } from "@/lib/parent";
import { notifier } from "@/lib/runtime/notifier";
import type { ServiceRunner } from "@/lib/runtime/runner";
import { shutdownTracing } from "@/lib/tracing";

let stopNow: ((why: string) => void) | null = null;
/** The parent's death before the worker can stop (noted only; the worker stops once it is up). */
let parentGone = false;

/** From the first line of the process: a fatal error exits 1, the parent's death is noted. */
export function watchProcess(log: Logger): void {
  // graphile-worker can throw from its batched job completion when its connection is terminated
  // under it. Log it plainly and exit: the fleet reaps this worker's jobs, and `npm start` starts a new one.
  for (const event of ["uncaughtException", "unhandledRejection"] as const) {
    process.on(event, (err: unknown) => {
      log.fatal({ err }, `[worker] fatal (${event}): ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    });
  }
  followParent(() => {
    parentGone = true;
    stopNow?.("parent gone");
  });
}

/** Once the worker is up: SIGTERM, SIGINT and the parent's death stop `services` (and the process). */
export function stopOnSignal(opts: { log: Logger; services: ServiceRunner; stopping: () => void }): void {
  const { log } = opts;
  let stopping = false;
  stopNow = (why: string) => {
    if (stopping) {
      log.warn(`[worker] ${why} again: exiting now`);
      process.exit(1);
    }
    stopping = true;
    opts.stopping();
    const graceMs = env().WORKER_SHUTDOWN_GRACE_MS;
    log.info(`[worker] ${why}: finishing running jobs (grace ${graceMs} ms)`);
    // The cleanup waits on the database (the last attempts' writes, the pools' end): a stuck
    // connection must not keep a stopping worker alive for ever.
    setTimeout(() => {
      log.error("[worker] cleanup did not finish within the grace and 5 s more: exiting now");
      process.exit(1);
    }, graceMs + 5_000).unref();
    opts.services
      .stop()
      .then(() => notifier().close())
      .then(() => closeDb())
      // The last attempts' spans, still in the batch, go out before the process does.
      .then(() => shutdownTracing())
      .catch((e: Error) => log.error({ err: e }, `[worker] cleanup failed: ${e.message}`))
      .finally(() => {
        log.info("[worker] stopped");
        process.exit(0);
      });
  };
  process.on("SIGTERM", () => stopNow?.("SIGTERM"));
  process.on("SIGINT", () => stopNow?.("SIGINT"));
  if (parentGone) stopNow("parent gone");
}
