/**
 * Retention: what the platform keeps, and the pruner that removes the rest. Every worker
 * process runs `pruneOnce` every PRUNE_INTERVAL_MS; each batch is its own short
 * transaction under the `prune` maintenance lock, so one process prunes at a time and no
 * batch holds locks for long. What goes, per tenant (its own days, or the platform's):
 *
 * - a job tree (a root job and all its descendants: an export's parts, a pipeline's
 *   stages) once every job in it has ended and is old enough: succeeded, cancelled,
 *   expired, or failed and discarded (replayed or dismissed) JOB_RETENTION_DAYS after it
 *   ended — or was discarded, whichever came later; a dead letter (failed, neither
 *   replayed nor discarded) DEAD_LETTER_RETENTION_DAYS after it failed. A tree with one
 *   job still open, or too young, or held by a workload (a row of a table its manifest lists
 *   whose `keepsJobWhile` holds: an import not yet cleaned up), stays whole. With each job go
 *   its attempts, transitions, stored files (their bytes too, unless the export expiry already
 *   removed them) and links, and — by their foreign keys' ON DELETE CASCADE — every row of
 *   the workloads' job-keyed tables (imports, webhook deliveries, probe effects…): this file
 *   names none of them, the registry lists them (a manifest's `tables`, with the bytes a row
 *   still holds: `storedKey`). Jobs that merely point at it (a replay's `replay_of_id`, an
 *   upload's `import_job_id`) forget it.
 * - the workloads' history tables (a manifest's `history`: webhook messages with no delivery
 *   left, schedule events), after the tenant's job retention;
 * - audit entries after AUDIT_RETENTION_DAYS (the platform's own entries: the default);
 * - worker rows that stopped or were declared dead more than a day ago.
 *
 * The statistics tables (job_stats_minute, job_state_counts) are never pruned: the
 * overview's charts and the Prometheus counters are built from them.
 */
import { db, Prisma } from "../db";
import { env } from "../env";
import { logger } from "../log";
import { historyTables, workloadTables } from "../jobs/registry";
import { maintenanceLocks, withMaintenanceLock } from "../maintenance";
import { storage } from "../storage";
import { effectiveRetention, type RetentionDays } from "../tenants/retention";

const DAY_MS = 86_400_000;
/** Stopped or dead worker rows are kept this long (the console's Workers page shows them). */
const DEAD_WORKER_KEEP_MS = DAY_MS;
/** Audit entries and worker rows are single rows: this many per batch for each root job of a job batch. */
const ROWS_PER_ROOT = 10;
/** Levels of descendants walked below a root (an export's parts, a pipeline's stages are one). */
const MAX_TREE_DEPTH = 16;

/** One batch: one transaction. */
export type PruneBatch = {
  kind: "jobs" | "history" | "audit" | "workers";
  /** The tenant whose rows it pruned (null: platform audit entries, worker rows). */
  tenantId: string | null;
  /** Root jobs deleted with their trees (jobs batches). */
  trees: number;
  /** Rows deleted, by table. */
  rows: {
    jobs: number;
    attempts: number;
    transitions: number;
    files: number;
    /** Rows of the workloads' history tables. */
    history: number;
    audit: number;
    workers: number;
  };
  /** Trees left alone this time: a job still open, too young, or busy (locked by a writer). */
  kept: number;
  /** Stored files removed after the batch committed. */
  storedFiles: number;
  ms: number;
};

export type PruneResult = {
  /** False: another process held the prune lock (or took it between batches). */
  ran: boolean;
  batches: PruneBatch[];
  /** The tick stopped at its time budget with more to do. */
  outOfTime: boolean;
};

export type PruneOptions = {
  /** Root jobs per batch (default PRUNE_BATCH_SIZE). */
  batchSize?: number;
  /** How long this tick may work, in ms (default PRUNE_TICK_BUDGET_MS). */
  budgetMs?: number;
  /** Called after each batch (the benchmark times them). */
  onBatch?: (batch: PruneBatch) => void;
};

type TenantRetention = { id: string } & RetentionDays;

const FINISHED = ["succeeded", "cancelled", "expired", "failed"];

const emptyRows = () => ({
  jobs: 0,
  attempts: 0,
  transitions: 0,
  files: 0,
  history: 0,
  audit: 0,
  workers: 0,
});

/** Rows a batch deleted, all tables together. */
export function rowsOf(batch: PruneBatch): number {
  const r = batch.rows;
  return r.jobs + r.attempts + r.transitions + r.files + r.history + r.audit + r.workers;
}

/**
 * One pruner tick: batches until nothing is left to prune or the time budget is spent.
 * Returns `{ ran: false }` at once when another process is pruning.
 */
export async function pruneOnce(opts: PruneOptions = {}): Promise<PruneResult> {
  const batchSize = opts.batchSize ?? env().PRUNE_BATCH_SIZE;
  const deadline = Date.now() + (opts.budgetMs ?? env().PRUNE_TICK_BUDGET_MS);
  const batches: PruneBatch[] = [];
  const [clock] = await db().$queryRaw<{ now: Date }[]>`SELECT now() AS now`;
  const now = clock!.now.getTime();
  const cutoff = (days: number) => new Date(now - days * DAY_MS);
  const tenants = (
    await db().tenant.findMany({
      select: { id: true, jobRetentionDays: true, deadLetterRetentionDays: true, auditRetentionDays: true },
      orderBy: { id: "asc" },
    })
  ).map((t): TenantRetention => ({ id: t.id, ...effectiveRetention(t) }));

  // Runs one batch under the lock; false when the lock is taken (stop the tick).
  const step = async (
    kind: PruneBatch["kind"],
    tenantId: string | null,
    work: (tx: Prisma.TransactionClient, batch: PruneBatch) => Promise<string[]>,
  ): Promise<PruneBatch | null> => {
    const started = performance.now();
    const batch: PruneBatch = { kind, tenantId, trees: 0, rows: emptyRows(), kept: 0, storedFiles: 0, ms: 0 };
    const run = await withMaintenanceLock(maintenanceLocks.prune, async (tx) => {
      // Never queue behind a writer for long: a busy row fails the batch, the next tick retries.
      await tx.$executeRaw`SET LOCAL lock_timeout = '2s'`;
      return work(tx, batch);
    });
    if (!run.ran) return null;
    // The bytes go once the rows are gone (a failed delete leaves an orphan, logged, never a dangling row).
    for (const key of run.value) {
      try {
        await storage().delete(key);
        batch.storedFiles++;
      } catch (err) {
        logger.error({ err, key }, `[prune] could not delete stored file ${key}`);
      }
    }
    batch.ms = performance.now() - started;
    batches.push(batch);
    opts.onBatch?.(batch);
    return batch;
  };

  const result = (ran: boolean, outOfTime = false): PruneResult => ({ ran, batches, outOfTime });

  for (const tenant of tenants) {
    // Trees found blocked this tick are not looked at again until the next.
    const skip: string[] = [];
    for (;;) {
      if (Date.now() >= deadline) return result(true, true);
      const batch = await step("jobs", tenant.id, (tx, b) =>
        pruneJobTrees(tx, tenant, cutoff(tenant.jobs), cutoff(tenant.deadLetters), batchSize, skip, b),
      );
      if (!batch) return result(batches.length > 0);
      if (batch.trees + batch.kept < batchSize) break;
    }
  }

  // History the workloads keep beside the jobs, by the tenant's job retention (their manifests'
  // `history`: webhook messages whose deliveries are gone, schedule events).
  const history = historyTables();
  for (const tenant of tenants) {
    for (;;) {
      if (Date.now() >= deadline) return result(true, true);
      const limit = batchSize * ROWS_PER_ROOT;
      let full = false;
      const batch = await step("history", tenant.id, async (tx, b) => {
        for (const h of history) {
          const n = await h.prune(tx, tenant.id, cutoff(tenant.jobs), limit);
          b.rows.history += n;
          if (n >= limit) full = true;
        }
        return [];
      });
      if (!batch) return result(batches.length > 0);
      if (!full) break;
    }
  }

  const audits: { id: string | null; days: number }[] = [
    ...tenants.map((t) => ({ id: t.id, days: t.audit })),
    { id: null, days: env().AUDIT_RETENTION_DAYS },
  ];
  for (const tenant of audits) {
    for (;;) {
      if (Date.now() >= deadline) return result(true, true);
      const limit = batchSize * ROWS_PER_ROOT;
      const batch = await step("audit", tenant.id, async (tx, b) => {
        const scope = tenant.id === null ? Prisma.sql`tenant_id IS NULL` : Prisma.sql`tenant_id = ${tenant.id}::uuid`;
        b.rows.audit = await tx.$executeRaw`
          DELETE FROM audit_logs WHERE id IN (
            SELECT id FROM audit_logs WHERE ${scope} AND created_at < ${cutoff(tenant.days)}
             LIMIT ${limit} FOR UPDATE SKIP LOCKED)`;
        return [];
      });
      if (!batch) return result(batches.length > 0);
      if (batch.rows.audit < limit) break;
    }
  }

  for (;;) {
    if (Date.now() >= deadline) return result(true, true);
    const limit = batchSize * ROWS_PER_ROOT;
    const batch = await step("workers", null, async (tx, b) => {
      b.rows.workers = await tx.$executeRaw`
        DELETE FROM workers WHERE id IN (
          SELECT id FROM workers WHERE state IN ('stopped', 'dead')
             AND coalesce(stopped_at, heartbeat_at) < ${new Date(now - DEAD_WORKER_KEEP_MS)}
           LIMIT ${limit} FOR UPDATE SKIP LOCKED)`;
      return [];
    });
    if (!batch) return result(batches.length > 0);
    if (batch.rows.workers < limit) break;
  }
  return result(true);
}

type TreeNode = { root: string; id: string; ok: boolean };

/**
 * One batch of a tenant's job trees: picks up to `limit` root jobs old enough (locked, skipping
 * any a writer holds), walks their descendants, keeps every tree with a job that may not go
 * yet, and deletes the rest, children's rows first. Returns the storage keys to remove.
 */
async function pruneJobTrees(
  tx: Prisma.TransactionClient,
  tenant: TenantRetention,
  jobCutoff: Date,
  deadCutoff: Date,
  limit: number,
  skip: string[],
  batch: PruneBatch,
): Promise<string[]> {
  // Candidate roots, oldest first, along jobs_prune_idx (tenant, finished_at) of root jobs:
  // ended (succeeded, cancelled, expired, or failed and discarded) before the job cutoff, or
  // dead letters before theirs. Rows a writer holds are skipped, not waited for.
  const rows = await tx.$queryRaw<{ id: string }[]>`
    SELECT id::text FROM jobs
     WHERE tenant_id = ${tenant.id}::uuid AND parent_id IS NULL AND finished_at IS NOT NULL
       AND finished_at < ${jobCutoff > deadCutoff ? jobCutoff : deadCutoff}
       AND NOT (id = ANY(${skip}::uuid[]))
       AND CASE WHEN status = 'failed' AND discarded_at IS NULL THEN finished_at < ${deadCutoff}
                ELSE status IN ('succeeded', 'cancelled', 'expired', 'failed')
                     AND greatest(finished_at, discarded_at) < ${jobCutoff} END
     ORDER BY finished_at
     LIMIT ${limit} FOR UPDATE SKIP LOCKED`;
  const roots = rows.map((r) => r.id);
  if (!roots.length) return [];

  // Every job of each tree, level by level along jobs_parent_id_idx (a recursive CTE's join
  // was planned as a hash join over the whole table: 320 ms a batch on 1M jobs).
  const rootOf = new Map(roots.map((id) => [id, id]));
  let level = roots;
  for (let depth = 0; level.length && depth < MAX_TREE_DEPTH; depth++) {
    const kids = await tx.$queryRaw<{ id: string; parent: string }[]>`
      SELECT id::text, parent_id::text AS parent FROM jobs WHERE parent_id = ANY(${level}::uuid[])`;
    for (const k of kids) rootOf.set(k.id, rootOf.get(k.parent)!);
    level = kids.map((k) => k.id);
  }
  // Whether each may go: ended, old enough by its own kind, and held by no workload's row (an
  // import still waiting for its cleanup: its staging table, its files).
  const states = await tx.$queryRaw<{ id: string; ok: boolean }[]>`
    SELECT j.id::text, coalesce(
             j.status::text = ANY(${FINISHED}::text[])
             AND CASE WHEN j.status = 'failed' AND j.discarded_at IS NULL THEN j.finished_at < ${deadCutoff}
                      ELSE greatest(j.finished_at, j.discarded_at) < ${jobCutoff} END
             ${holds()},
           false) AS ok
      FROM jobs j WHERE j.id = ANY(${[...rootOf.keys()]}::uuid[])`;
  const nodes: TreeNode[] = states.map((r) => ({ id: r.id, root: rootOf.get(r.id)!, ok: r.ok }));
  const blocked = new Set(nodes.filter((n) => !n.ok).map((n) => n.root));
  // Deeper than walked: not all of it is known, so none of it goes.
  for (const id of level) blocked.add(rootOf.get(id)!);

  // Lock the descendants as the roots are locked, skipping any a writer holds: such a tree waits.
  const children = nodes.filter((n) => n.id !== n.root && !blocked.has(n.root));
  if (children.length) {
    const locked = await tx.$queryRaw<{ id: string }[]>`
      SELECT id::text FROM jobs WHERE id = ANY(${children.map((n) => n.id)}::uuid[]) FOR UPDATE SKIP LOCKED`;
    const got = new Set(locked.map((r) => r.id));
    for (const n of children) if (!got.has(n.id)) blocked.add(n.root);
  }
  // A replay outside the tree points at it (replay_of_id, set null when it goes): that row is
  // written too, so it must be free now, not waited for.
  const candidateIds = nodes.filter((n) => !blocked.has(n.root)).map((n) => n.id);
  if (candidateIds.length) {
    const pointing = await tx.$queryRaw<{ id: string; target: string }[]>`
      SELECT id::text, replay_of_id::text AS target FROM jobs
       WHERE replay_of_id = ANY(${candidateIds}::uuid[]) AND NOT (id = ANY(${candidateIds}::uuid[]))`;
    if (pointing.length) {
      const locked = await tx.$queryRaw<{ id: string }[]>`
        SELECT id::text FROM jobs WHERE id = ANY(${pointing.map((p) => p.id)}::uuid[]) FOR UPDATE SKIP LOCKED`;
      const got = new Set(locked.map((r) => r.id));
      for (const p of pointing) if (!got.has(p.id)) blocked.add(rootOf.get(p.target)!);
    }
  }

  skip.push(...blocked);
  batch.kept = blocked.size;
  const ids = nodes.filter((n) => !blocked.has(n.root)).map((n) => n.id);
  batch.trees = roots.length - blocked.size;
  if (!ids.length) return [];

  // The stored bytes still there: stored files (lib/files) the expiry has not removed, and what
  // the workloads' rows still hold (a split export's part files not yet swept).
  const keys = await tx.$queryRaw<{ key: string | null }[]>`
    SELECT storage_key AS key FROM export_files WHERE job_id = ANY(${ids}::uuid[]) AND deleted_at IS NULL
    ${storedKeys(ids)}`;

  // The workloads' job-keyed tables go by their foreign keys' ON DELETE CASCADE with the jobs below.
  // The cascades would do these row by row; one statement each is cheaper, and counts them.
  batch.rows.transitions = await tx.$executeRaw`DELETE FROM job_transitions WHERE job_id = ANY(${ids}::uuid[])`;
  batch.rows.attempts = await tx.$executeRaw`DELETE FROM job_attempts WHERE job_id = ANY(${ids}::uuid[])`;
  batch.rows.files = await tx.$executeRaw`DELETE FROM export_files WHERE job_id = ANY(${ids}::uuid[])`;
  // Children and parents in one statement: parent_id's SET NULL then finds nothing left to set.
  batch.rows.jobs = await tx.$executeRaw`DELETE FROM jobs WHERE id = ANY(${ids}::uuid[])`;
  return keys.map((k) => k.key).filter((k): k is string => Boolean(k));
}

const IDENT = /^[a-z_][a-z0-9_]*$/;

/** A workload table's name and job column, checked as identifiers (they come from manifests, never from a request). */
function tableOf(t: { name: string; jobColumn?: string }): { table: Prisma.Sql; column: Prisma.Sql } {
  const column = t.jobColumn ?? "job_id";
  if (!IDENT.test(t.name) || !IDENT.test(column)) throw new Error(`Bad workload table ${t.name}.${column}`);
  return { table: Prisma.raw(t.name), column: Prisma.raw(column) };
}

/** `AND NOT EXISTS …` for each workload table whose rows may hold their job back (`keepsJobWhile`). */
function holds(): Prisma.Sql {
  const parts = workloadTables()
    .filter((t) => t.keepsJobWhile)
    .map((t) => {
      const { table, column } = tableOf(t);
      return Prisma.sql`AND NOT EXISTS (SELECT 1 FROM ${table} t WHERE t.${column} = j.id AND (${Prisma.raw(t.keepsJobWhile!)}))`;
    });
  return parts.length ? Prisma.join(parts, " ") : Prisma.empty;
}

/** `UNION ALL SELECT …` for each workload table with a stored key (`storedKey`). */
function storedKeys(ids: string[]): Prisma.Sql {
  const parts = workloadTables()
    .filter((t) => t.storedKey)
    .map((t) => {
      const { table, column } = tableOf(t);
      const key = Prisma.raw(`(${t.storedKey})`);
      return Prisma.sql`UNION ALL SELECT ${key} FROM ${table} t WHERE t.${column} = ANY(${ids}::uuid[]) AND ${key} IS NOT NULL`;
    });
  return parts.length ? Prisma.join(parts, " ") : Prisma.empty;
}
