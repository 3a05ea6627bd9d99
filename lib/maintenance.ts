/**
 * Maintenance that every worker process starts on a timer but only one should
 * do at a time (the reaper, the statistics rollup, the upload cleanup, the pruner,
 * a workload's service such as the export cleanup): it runs
 * in a transaction holding a named, transaction-scoped advisory lock, and a
 * process that finds the lock taken skips its tick. The lock ends with the
 * transaction, so a process that dies mid-tick frees it at once, and one that
 * stalls mid-tick frees it after WORKER_DEAD_AFTER_MS (the transaction's
 * idle_in_transaction_session_timeout).
 */
import { db, type Prisma } from "./db";
import { env } from "./env";

/**
 * The engine's maintenance locks, by name (the advisory lock key is derived from it).
 * A workload's service names its own lock (`<workload>_…`, e.g. `export_cleanup`) in its folder.
 */
export const maintenanceLocks = {
  reaper: "reaper",
  statsRollup: "stats_rollup",
  uploadCleanup: "upload_cleanup",
  /** The retention pruner (lib/retention): one batch at a time, fleet-wide. */
  prune: "prune",
} as const;

/** A lock's name: one of the engine's, or one a workload's service names. */
export type MaintenanceLock = string;

export type LockedRun<T> = { ran: true; value: T } | { ran: false };

/**
 * Runs `fn` in a transaction holding the lock `lock`, or returns `{ ran: false }`
 * at once when another process holds it.
 */
export async function withMaintenanceLock<T>(
  lock: MaintenanceLock,
  fn: (tx: Prisma.TransactionClient) => Promise<T>,
  opts: { timeoutMs?: number } = {},
): Promise<LockedRun<T>> {
  return db().$transaction(
    async (tx) => {
      const [row] = await tx.$queryRaw<{ locked: boolean }[]>`
        SELECT pg_try_advisory_xact_lock(hashtext('conveyor.maintenance'), hashtext(${lock})) AS locked`;
      if (!row?.locked) return { ran: false } as const;
      // A process stalled mid-pass (SIGSTOP, a frozen VM) would hold the lock, and so stop the reaper
      // fleet-wide, for as long as it stalls: Postgres ends a transaction left idle this long, which frees it.
      await tx.$queryRaw`SELECT set_config('idle_in_transaction_session_timeout', ${String(env().WORKER_DEAD_AFTER_MS)}, true)`;
      return { ran: true, value: await fn(tx) } as const;
    },
    { timeout: opts.timeoutMs ?? 30_000 },
  );
}
