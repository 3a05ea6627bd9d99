/**
 * Creating jobs. The row is the job: admission (lib/admission) hands it to
 * graphile-worker, in the same INSERT when its scope has room (a trigger),
 * or later from a worker's admitter, so no job is recorded but never run.
 */
import { createHash } from "node:crypto";
import { v7 as uuidv7 } from "uuid";
import { inTransaction, pool, prepared, type SqlClient } from "../db";
import { AppError, parseOrThrow } from "../errors";
import type { JobModel } from "../generated/prisma/models";
import { env } from "../env";
import { QUOTA_REFUSED, quotaRefusal } from "../tenants/quotas";
import { currentTraceCarrier, withSpan } from "../tracing";
import { Batcher } from "../batcher";
import { getTaskDefinition } from "./registry";
import type { QueueName } from "./task";
import type { PauseScope } from "./admission-state";
import { ACTIVE_PAUSES_JSON } from "./pause-scopes";
import { gateScheduledRuns, type RunRefusal } from "./sql/gate-scheduled-runs";
import { JOB_COLUMNS, jobFromRow, type JobRow } from "./sql/job-row";

export type EnqueueOptions = {
  tenantId: string;
  type: string;
  input: unknown;
  createdById?: string | null;
  /** Same key and same input: the same job. Same key, other input: 409. */
  idempotencyKey?: string | null;
  /** lower runs first */
  priority?: number;
  /** Later than now: the job waits as `scheduled` until then (lib/schedules promotes it). */
  runAt?: Date;
  parentId?: string | null;
  /** Overrides the task's retry budget. */
  maxAttempts?: number;
  /** Overrides the task's queue (e.g. replays and export parts run on `bulk`). */
  queue?: QueueName;
  /**
   * Runs just before a new job is inserted — not when the idempotency key
   * answers with an existing job — and may refuse it by throwing (quotas). It
   * runs once alone (a quick refusal), then again in the insert's transaction
   * under a lock per creating user (or tenant), so concurrent requests cannot
   * all pass a check the last one fails. `inserting`: the second call, whose
   * writes commit with the job's row (`jobId`).
   */
  beforeInsert?: (tx: SqlClient, jobId: string, inserting: boolean) => Promise<void>;
  /**
   * The quotas of unfinished work (and, with `exportBytes`, the tenant's stored bytes) the
   * new job must fit, checked in the INSERT itself (`conveyor_enqueue_gate`): one statement,
   * under the same per-tenant lock as `beforeInsert`, refused with 429 `quota_exceeded`.
   */
  quota?: { userId: string | null; exportBytes?: boolean };
};

export type EnqueueResult = {
  job: JobModel;
  created: boolean;
  /**
   * A new job's answer: the active pauses when it waits unadmitted (to say which pause holds it),
   * read by its own INSERT; [] when it does not wait. Absent for an idempotent replay.
   */
  pauses?: PauseScope[];
};

/** JSON with sorted keys, so equal inputs hash equally whatever their key order. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

export function hashInput(type: string, input: unknown): string {
  return createHash("sha256").update(canonicalJson({ type, input })).digest("hex");
}

async function findByIdempotencyKey(tenantId: string, key: string, inputHash: string): Promise<JobModel | null> {
  const { rows } = await pool().query<JobRowText>({
    ...prepared(`SELECT ${JOB_COLUMNS} FROM jobs WHERE tenant_id = $1::uuid AND idempotency_key = $2`),
    values: [tenantId, key],
  });
  const existing = rows[0] ? rowToJob(rows[0]) : null;
  if (existing && existing.inputHash !== inputHash) {
    throw new AppError("conflict", "Idempotency-Key was already used with a different request body");
  }
  return existing;
}

/**
 * Validates the input against the task's schema and creates the job (or
 * returns the idempotent original), in a span of the caller's trace whose
 * context is stored with the job: its attempts continue that trace.
 */
export function enqueueJob(opts: EnqueueOptions): Promise<EnqueueResult> {
  return withSpan(
    `enqueue ${opts.type}`,
    { "conveyor.job.type": opts.type, "conveyor.tenant.id": opts.tenantId },
    async (span) => {
      const result = await insertJob(opts);
      span.setAttributes({
        "conveyor.job.id": result.job.id,
        "conveyor.job.queue": result.job.queue,
        "conveyor.job.created": result.created,
      });
      return result;
    },
  );
}

async function insertJob(opts: EnqueueOptions): Promise<EnqueueResult> {
  const def = getTaskDefinition(opts.type);
  if (!def)
    throw new AppError("invalid_input", `Unknown job type: ${opts.type}`, [
      { path: "type", message: "unknown job type" },
    ]);
  const input = parseOrThrow(def.inputSchema, opts.input);
  const inputHash = hashInput(opts.type, input);
  const key = opts.idempotencyKey ?? null;

  if (key) {
    const existing = await findByIdempotencyKey(opts.tenantId, key, inputHash);
    if (existing) return { job: existing, created: false };
  }
  // One statement: this is the hot path of every API request. The admission
  // trigger dispatches the job in the same statement when it can. With quotas, the
  // statement passes a gate first (conveyor_enqueue_gate: the tenant's lock, then the
  // counts in a snapshot taken after it, so they see every insert before it); a
  // refusal raises and inserts nothing. With another check (`beforeInsert`), the check
  // and the insert share a transaction under the same lock.
  const id = uuidv7();
  const carrier = currentTraceCarrier();
  const traceContext = carrier && JSON.stringify(carrier);
  const values = [
    id,
    opts.tenantId,
    opts.type,
    opts.queue ?? def.queue,
    opts.priority ?? 0,
    JSON.stringify(input),
    inputHash,
    key,
    opts.maxAttempts ?? def.retry.maxAttempts,
    opts.createdById ?? null,
    opts.parentId ?? null,
    opts.runAt ?? null,
    // The enqueue span's context (null when tracing is off): the attempts' parent.
    traceContext,
  ];
  const pending: PendingInsert = { values, quota: opts.quota };
  // Refused without the lock first: a flood past its quota never queues on it (nor holds connections waiting).
  await opts.beforeInsert?.(pool(), id, false);
  try {
    const row = opts.beforeInsert
      ? await inTransaction(async (tx) => {
          await tx.query("SELECT pg_advisory_xact_lock(hashtext('conveyor_enqueue'), hashtext($1))", [opts.tenantId]);
          await opts.beforeInsert!(tx, id, true);
          return insertOne(tx, pending);
        })
      : await create(opts.tenantId, pending).then(unwrap);
    return { job: rowToJob(row), created: true, pauses: row.pauses ?? [] };
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === QUOTA_REFUSED) throw quotaRefusal((err as Error).message);
    // A concurrent request with the same key won the race: answer with its job.
    if (key && code === "23505") {
      const existing = await findByIdempotencyKey(opts.tenantId, key, inputHash);
      if (existing) return { job: existing, created: false };
    }
    throw err;
  }
}

/** A create's row (`values`, in insertOne's parameter order) and the quotas it must pass. */
type PendingInsert = { values: unknown[]; quota: EnqueueOptions["quota"] };
type Inserted = { row: JobRowText } | { error: unknown };
const unwrap = (r: Inserted): JobRowText => {
  if ("error" in r) throw r.error;
  return r.row;
};

function insertOne(client: SqlClient, p: PendingInsert): Promise<JobRowText> {
  const quota = p.quota;
  const e = quota ? env() : undefined;
  return client
    .query<JobRowText>({
      ...prepared(`INSERT INTO jobs (id, tenant_id, type, queue, priority, status, input, input_hash, idempotency_key,
                         max_attempts, created_by_id, parent_id, run_at, updated_at, trace_context)
       SELECT $1::uuid, $2::uuid, $3::text, $4::text, $5::int,
              CASE WHEN $12::timestamptz > now() THEN 'scheduled' ELSE 'queued' END::job_status,
              $6::jsonb, $7::text, $8::text, $9::int, $10::uuid, $11::uuid, coalesce($12::timestamptz, now()), now(),
              $13::jsonb
       ${quota ? "WHERE conveyor_enqueue_gate($2::uuid, $14::uuid, $15::boolean, $16::int, $17::int, $18::bigint)" : ""}
       RETURNING ${INSERTED_COLUMNS}`),
      values: quota
        ? [
            ...p.values,
            quota.userId,
            Boolean(quota.exportBytes),
            e!.QUOTA_JOBS_PER_USER,
            e!.QUOTA_JOBS_PER_TENANT,
            e!.QUOTA_EXPORT_BYTES,
          ]
        : p.values,
    })
    .then(({ rows }) => rows[0]!);
}

/**
 * Group commit for creates: the creates that arrive while one is on its way to
 * Postgres go together in the next statement, one transaction and one commit.
 * Every create notifies (the SSE hub; admission), and Postgres serialises
 * notifying transactions through their commit, so one at a time they could not
 * share a WAL flush; together they do. An idle server sends each create alone
 * at once. The quota gate runs for the last row of each user and of each tenant,
 * told how many unfinished jobs the rows before it in the statement add for its user
 * and tenant (the counts it reads, open_job_counts, take a statement's rows in at its
 * end), rows ordered by the lock each takes so two batches cannot deadlock; any failure (a refusal, a reused idempotency
 * key) inserts nothing, and then every create of the batch runs alone and gets
 * its own answer.
 */
async function insertBatch(items: PendingInsert[]): Promise<Inserted[]> {
  const alone = (p: PendingInsert) =>
    insertOne(pool(), p).then(
      (row): Inserted => ({ row }),
      (error: unknown): Inserted => ({ error }),
    );
  if (items.length === 1) return [await alone(items[0]!)];
  const e = env();
  const column = (i: number) => items.map((p) => p.values[i] ?? null);
  try {
    const { rows } = await pool().query<JobRowText>({
      ...prepared(`INSERT INTO jobs (id, tenant_id, type, queue, priority, status, input, input_hash, idempotency_key,
                         max_attempts, created_by_id, parent_id, run_at, updated_at, trace_context)
       SELECT r.id, r.tenant_id, r.type, r.queue, r.priority,
              CASE WHEN r.run_at > now() THEN 'scheduled' ELSE 'queued' END::job_status,
              r.input, r.input_hash, r.idempotency_key, r.max_attempts, r.created_by_id, r.parent_id,
              coalesce(r.run_at, now()), now(), r.trace_context
         FROM (SELECT u.*,
                      -- The unfinished jobs earlier rows of this statement add for the user and the
                      -- tenant: the counts the gate reads take them in only at the statement's end.
                      (count(*) FILTER (WHERE u.parent_id IS NULL) OVER (PARTITION BY u.tenant_id, u.created_by_id ORDER BY k.k, u.ord
                         ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING))::int AS pending_user,
                      (count(*) FILTER (WHERE u.parent_id IS NULL) OVER (PARTITION BY u.tenant_id ORDER BY k.k, u.ord
                         ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING))::int AS pending_tenant,
                      -- The gate runs only for a gated row that is the last of its user (and kind) or of
                      -- its tenant: it counts the most rows before it, so if it passes every earlier one
                      -- would, and a refusal fails the batch (each create then runs alone). It takes the
                      -- lock of every key, in key order, before the commit that makes the rows count.
                      (row_number() OVER (PARTITION BY u.gated, u.quota_user, u.created_by_id, u.tenant_id, u.export_bytes
                                          ORDER BY k.k DESC, u.ord DESC) = 1
                       OR row_number() OVER (PARTITION BY u.gated, u.tenant_id ORDER BY k.k DESC, u.ord DESC) = 1) AS checks
                 FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::int[], $6::jsonb[],
                             $7::text[], $8::text[], $9::int[], $10::uuid[], $11::uuid[], $12::timestamptz[],
                             $13::jsonb[], $14::boolean[], $15::uuid[], $16::boolean[]) WITH ORDINALITY
                   AS u(id, tenant_id, type, queue, priority, input, input_hash, idempotency_key, max_attempts,
                        created_by_id, parent_id, run_at, trace_context, gated, quota_user, export_bytes, ord),
                      LATERAL (SELECT hashtext(u.tenant_id::text) AS k) k
                ORDER BY k.k, u.ord OFFSET 0) r
        WHERE NOT r.gated
           OR NOT r.checks
           OR conveyor_enqueue_gate(r.tenant_id, r.quota_user, r.export_bytes, $17::int, $18::int, $19::bigint,
                                    r.pending_user, r.pending_tenant)
       RETURNING ${INSERTED_COLUMNS}`),
      values: [
        ...Array.from({ length: 13 }, (_, i) => column(i)),
        items.map((p) => Boolean(p.quota)),
        items.map((p) => p.quota?.userId ?? null),
        items.map((p) => Boolean(p.quota?.exportBytes)),
        e.QUOTA_JOBS_PER_USER,
        e.QUOTA_JOBS_PER_TENANT,
        e.QUOTA_EXPORT_BYTES,
      ],
    });
    const byId = new Map(rows.map((r) => [r.id, r]));
    return items.map((p) => {
      const row = byId.get(p.values[0] as string);
      return row ? { row } : { error: new Error("the batched INSERT returned no row for this job") };
    });
  } catch {
    // Nothing was inserted: each create runs alone below and gets its own answer.
  }
  return Promise.all(items.map(alone));
}

/**
 * A batcher per tenant: a tenant's creates share a statement, two tenants' never do. A batch waits on
 * its tenants' quota locks, and one create refused for its quota sends the whole batch back to run
 * alone; so another tenant's create never waits on a flooding tenant's lock or pays for its refusals
 * (bench:limits: the other member's creates took 4× their time beside a flood when they shared).
 */
const createBatchers = new Map<string, Batcher<PendingInsert, Inserted>>();
async function create(tenantId: string, pending: PendingInsert): Promise<Inserted> {
  let batcher = createBatchers.get(tenantId);
  // Two batches in flight: one being written while the next gathers (the pool has room for both).
  if (!batcher)
    createBatchers.set(tenantId, (batcher = new Batcher(insertBatch, { maxBatch: 64, maxInFlight: 2, eager: true })));
  try {
    return await batcher.push(pending);
  } finally {
    // After the batch's bookkeeping settles (its slot is given back after its callers resume).
    setImmediate(() => {
      if (batcher.idle() && createBatchers.get(tenantId) === batcher) createBatchers.delete(tenantId);
    });
  }
}

/** One run of a schedule: the occurrence it is for and its concrete input. */
export type ScheduledRunRow = {
  tenantId: string;
  type: string;
  input: unknown;
  createdById: string | null;
  /** jobs.priority (lower runs first): the schedule's. */
  priority: number;
  scheduleId: string;
  scheduledFor: Date;
};

/** A run the quotas refused: not made. */
export type RefusedRun = { run: ScheduledRunRow; refusal: RunRefusal };

/**
 * Inserts a schedule's runs on the bulk queue, in the caller's transaction,
 * each through the quota gate first (its owner's and its tenant's unfinished
 * jobs; an export's, the tenant's stored bytes): a run the quotas refuse is not
 * made and comes back in `refused`, for the caller to record. The gate's locks
 * are held to the caller's commit. An occurrence that already has its run
 * (another scheduler was first) is skipped by schedule_runs' unique (schedule_id,
 * scheduled_for): `made` holds the runs made, as { id, scheduleId, scheduledFor }.
 */
export async function insertScheduledRuns(
  client: SqlClient,
  runs: ScheduledRunRow[],
): Promise<{ made: { id: string; scheduleId: string; scheduledFor: Date }[]; refused: RefusedRun[] }> {
  if (!runs.length) return { made: [], refused: [] };
  const rows = runs.map((r) => {
    const def = getTaskDefinition(r.type);
    if (!def) throw new Error(`Unknown job type: ${r.type}`);
    const input = parseOrThrow(def.inputSchema, r.input);
    return {
      ...r,
      id: uuidv7(),
      input: JSON.stringify(input),
      hash: hashInput(r.type, input),
      max: def.retry.maxAttempts,
      exportBytes: Boolean(def.schedulable?.exportBytes),
    };
  });
  const e = env();
  const verdicts = await gateScheduledRuns(client, rows, {
    perUser: e.QUOTA_JOBS_PER_USER,
    perTenant: e.QUOTA_JOBS_PER_TENANT,
    exportBytes: e.QUOTA_EXPORT_BYTES,
  });
  const refused = runs.flatMap((run, i) => (verdicts[i] ? [{ run, refusal: verdicts[i] }] : []));
  const admitted = rows.filter((_, i) => !verdicts[i]);
  if (!admitted.length) return { made: [], refused };
  // The occurrence is claimed first (schedule_runs' unique key; its FK to the job is checked at
  // commit), and only a claimed occurrence's job is inserted.
  const { rows: made } = await client.query<{ id: string; scheduleId: string; scheduledFor: Date }>(
    `WITH r AS (
       SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::jsonb[], $5::text[], $6::int[], $7::uuid[],
                            $8::uuid[], $9::timestamptz[], $10::int[])
         AS r(id, tenant_id, type, input, input_hash, max_attempts, created_by_id, schedule_id, scheduled_for, priority)
     ), claimed AS (
       INSERT INTO schedule_runs (job_id, schedule_id, scheduled_for)
       SELECT id, schedule_id, scheduled_for FROM r
       ON CONFLICT (schedule_id, scheduled_for) DO NOTHING
       RETURNING job_id, schedule_id, scheduled_for
     ), inserted AS (
       INSERT INTO jobs (id, tenant_id, type, queue, priority, status, input, input_hash, max_attempts, created_by_id,
                         run_at, updated_at)
       SELECT r.id, r.tenant_id, r.type, 'bulk', r.priority, 'queued', r.input, r.input_hash, r.max_attempts, r.created_by_id,
              now(), now()
         FROM r JOIN claimed c ON c.job_id = r.id
       RETURNING id
     )
     SELECT c.job_id AS id, c.schedule_id AS "scheduleId", c.scheduled_for AS "scheduledFor"
       FROM claimed c JOIN inserted i ON i.id = c.job_id`,
    [
      admitted.map((r) => r.id),
      admitted.map((r) => r.tenantId),
      admitted.map((r) => r.type),
      admitted.map((r) => r.input),
      admitted.map((r) => r.hash),
      admitted.map((r) => r.max),
      admitted.map((r) => r.createdById),
      admitted.map((r) => r.scheduleId),
      admitted.map((r) => r.scheduledFor),
      admitted.map((r) => r.priority),
    ],
  );
  return { made, refused };
}

// A created job's answer also says which pauses hold it, from the same statement: one round trip
// fewer for a create a pause holds (uncorrelated, the subquery runs once per statement, not per row).
const INSERTED_COLUMNS = `${JOB_COLUMNS},
  CASE WHEN status IN ('queued', 'retrying') AND admitted_at IS NULL THEN ${ACTIVE_PAUSES_JSON} END AS pauses`;

// The job as inserted (not re-read: a worker may have claimed it by then).
type JobRowText = JobRow & {
  /** INSERTED_COLUMNS only. */
  pauses?: PauseScope[] | null;
};

function rowToJob({ pauses: _pauses, ...row }: JobRowText): JobModel {
  return jobFromRow(row);
}
