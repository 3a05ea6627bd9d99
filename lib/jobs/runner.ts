/**
 * Runs one attempt of a job: claim with a lease and a fresh fencing token,
 * heartbeat, call the handler, then record the outcome. Every write after the
 * claim carries the token, so a stale attempt changes nothing; a write that
 * finds its token stale aborts the handler.
 */
import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import { bookkeepingPool, db, pool, Prisma } from "../db";
import { env } from "../env";
import { eventHub } from "../events/hub";
import { getTaskDefinition } from "./catalog";
import { AbortReason, classifyError, type Classified } from "./errors";
import { backoffMs } from "./retry";
import { hashInput } from "./enqueue";
import type { ChildJob, JobInfo, ProgressUpdate, TaskDefinition } from "./task";

/** A worker process's identity, recorded on leases and attempts. */
export function makeWorkerId(): string {
  return `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
}

export type RunOutcome = "succeeded" | "failed" | "retrying" | "cancelled" | "skipped" | "lost" | "waiting";

/** Thrown out of a handler by `waitForChildren` once the fan-out is recorded. */
class WaitingForChildren extends Error {
  constructor(readonly children: number) {
    super(`waiting for ${children} child jobs`);
  }
}

type ClaimedJob = {
  id: string;
  tenantId: string;
  type: string;
  input: unknown;
  attempts: number;
  maxAttempts: number;
  fencingToken: bigint;
  createdById: string | null;
  priority: number;
  checkpoint: unknown;
};
type Claimed = { job: ClaimedJob; token: bigint; attemptId: bigint };

/**
 * Claims a job: one statement (the update and the attempt row together), on
 * the raw pool — this is the hot path of every job.
 */
async function claimJob(jobId: string, type: string, workerId: string, leaseMs: number): Promise<Claimed | null> {
  const { rows } = await bookkeepingPool().query<
    Omit<ClaimedJob, "fencingToken"> & { fencingToken: string; attemptId: string }
  >(
    `WITH claimed AS (
       UPDATE jobs SET
         status = 'running',
         attempts = attempts + 1,
         fencing_token = fencing_token + 1,
         lease_owner = $2,
         lease_expires_at = now() + make_interval(secs => $3::float8),
         heartbeat_at = now(),
         started_at = coalesce(started_at, now()),
         updated_at = now()
       WHERE id = $1 AND type = $4 AND status IN ('queued', 'retrying') AND cancel_requested_at IS NULL
         AND run_at <= now() + interval '1 second'
         -- Only an admitted job starts: a stale dispatch (the job was taken back by a
         -- pause or the reaper since) is refused. The row's re-check after a concurrent
         -- update sees admitted_at, which a pause clears in the same transaction.
         AND admitted_at IS NOT NULL
         -- A pause that came after admission: the dispatch was already fetched.
         AND NOT conveyor_paused(queue, type, tenant_id)
       RETURNING id, tenant_id, type, input, attempts, max_attempts, fencing_token, created_by_id, priority, checkpoint
     ), attempt AS (
       INSERT INTO job_attempts (job_id, attempt, worker_id, fencing_token)
       SELECT id, attempts, $2, fencing_token FROM claimed
       RETURNING id
     )
     SELECT c.id, c.tenant_id AS "tenantId", c.type, c.input, c.attempts, c.max_attempts AS "maxAttempts",
            c.fencing_token AS "fencingToken", c.created_by_id AS "createdById", c.priority, c.checkpoint,
            a.id AS "attemptId"
     FROM claimed c, attempt a`,
    [jobId, workerId, leaseMs / 1000, type],
  );
  const row = rows[0];
  if (!row) {
    // Backstops: a waiting job whose cancel request found no attempt to stop
    // ends here; one whose scope was paused after its admission goes back to
    // wait (its slot freed, its place in line kept) until the pause is lifted.
    await pool().query(
      `UPDATE jobs SET
         status = CASE WHEN cancel_requested_at IS NOT NULL THEN 'cancelled'::job_status ELSE status END,
         finished_at = CASE WHEN cancel_requested_at IS NOT NULL THEN now() ELSE finished_at END,
         error_class = CASE WHEN cancel_requested_at IS NOT NULL THEN 'cancelled' ELSE error_class END,
         error_message = CASE WHEN cancel_requested_at IS NOT NULL
                              THEN coalesce(error_message, 'Cancelled on request') ELSE error_message END,
         progress_message = CASE WHEN cancel_requested_at IS NOT NULL THEN 'Cancelled' ELSE progress_message END,
         admitted_at = NULL
       WHERE id = $1 AND status IN ('queued', 'retrying') AND admitted_at IS NOT NULL
         AND (cancel_requested_at IS NOT NULL OR conveyor_paused(queue, type, tenant_id))`,
      [jobId],
    );
    return null;
  }
  const token = BigInt(row.fencingToken);
  return { job: { ...row, fencingToken: token }, token, attemptId: BigInt(row.attemptId) };
}

/** Progress writes, throttled to one per PROGRESS_INTERVAL_MS; `done` never moves backwards. */
function makeProgressWriter(jobId: string, token: bigint, onStale: () => void) {
  const interval = env().PROGRESS_INTERVAL_MS;
  let pending: ProgressUpdate | null = null;
  let lastWrite = 0;
  let timer: NodeJS.Timeout | null = null;
  let inFlight: Promise<void> = Promise.resolve();
  let closed = false;

  const write = (u: ProgressUpdate) =>
    db().$executeRaw`
      UPDATE jobs SET
        progress_done = GREATEST(progress_done, ${BigInt(Math.floor(u.done ?? 0))}),
        progress_total = CASE WHEN ${u.total === undefined} THEN progress_total ELSE ${u.total === undefined || u.total === null ? null : BigInt(Math.floor(u.total))}::bigint END,
        progress_unit = coalesce(${u.unit ?? null}, progress_unit),
        progress_stage = coalesce(${u.stage ?? null}, progress_stage),
        progress_message = coalesce(${u.message ?? null}, progress_message),
        updated_at = now()
      WHERE id = ${jobId}::uuid AND fencing_token = ${token} AND status = 'running'`;

  const flush = () => {
    timer = null;
    if (!pending) return inFlight;
    const u = pending;
    pending = null;
    lastWrite = Date.now();
    inFlight = inFlight
      .then(() => write(u))
      .then((count) => {
        if (count === 0) onStale();
      })
      .catch((e: Error) => {
        console.error(`[jobs] job ${jobId} progress write failed: ${e.message}`);
      });
    return inFlight;
  };

  return {
    update(u: ProgressUpdate) {
      if (closed) return; // a late callback after the attempt ended
      // Merge so a throttled update keeps fields set by an earlier one.
      pending = { ...pending, ...u, done: Math.max(pending?.done ?? 0, u.done ?? 0) };
      if (timer) return;
      const wait = Math.max(0, lastWrite + interval - Date.now());
      timer = setTimeout(flush, wait);
    },
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      await flush();
    },
  };
}

function toJobInfo(job: ClaimedJob): JobInfo {
  return {
    id: job.id,
    tenantId: job.tenantId,
    type: job.type,
    attempt: job.attempts,
    maxAttempts: job.maxAttempts,
    createdById: job.createdById,
  };
}

async function recordSuccess(c: Claimed, def: TaskDefinition, result: unknown, startedAt: number): Promise<boolean> {
  const resultJson = JSON.stringify(result ?? null);
  if (!def.commit) {
    // The common case: one statement, fenced by the token.
    const { rows } = await bookkeepingPool().query<{ ok: boolean }>(
      `WITH done AS (
         UPDATE jobs SET status = 'succeeded', result = $3::jsonb, finished_at = now(), lease_owner = NULL,
                lease_expires_at = NULL, error_class = NULL, error_message = NULL, error_stack = NULL, updated_at = now()
         WHERE id = $1 AND fencing_token = $2 AND status = 'running'
         RETURNING id
       ), attempt AS (
         UPDATE job_attempts SET outcome = CASE WHEN EXISTS (SELECT 1 FROM done) THEN 'succeeded' ELSE 'lost' END,
                finished_at = now(), duration_ms = $5
         WHERE id = $4 AND outcome = 'running' -- the reaper's verdict on a lost attempt stands
       )
       SELECT EXISTS (SELECT 1 FROM done) AS ok`,
      [c.job.id, c.token.toString(), resultJson, c.attemptId.toString(), Date.now() - startedAt],
    );
    return rows[0]?.ok === true;
  }
  return db().$transaction(async (tx) => {
    const { count } = await tx.job.updateMany({
      where: { id: c.job.id, fencingToken: c.token, status: "running" },
      data: {
        status: "succeeded",
        result: (result ?? Prisma.JsonNull) as Prisma.InputJsonValue,
        finishedAt: new Date(),
        leaseOwner: null,
        leaseExpiresAt: null,
        // A success after failed attempts is a success: the attempts keep their errors.
        errorClass: null,
        errorMessage: null,
        errorStack: null,
      },
    });
    if (count === 1) await def.commit!(tx, toJobInfo(c.job), result);
    // Only a still-open attempt: the reaper's verdict (and time) on a lost one stands.
    await tx.jobAttempt.updateMany({
      where: { id: c.attemptId, outcome: "running" },
      data: { outcome: count ? "succeeded" : "lost", finishedAt: new Date(), durationMs: Date.now() - startedAt },
    });
    return count === 1;
  });
}

/**
 * Records a fan-out, fenced like every write of the attempt: the children are
 * enqueued (admitted inline where there is room), the checkpoint saved, and the
 * job keeps `running` but gives up its lease, its admission slot and its
 * fencing token (so this attempt's heartbeat can write nothing more). It gets
 * one more attempt in its budget: the run that gathers the children is not a
 * retry. The attempt ends as `waiting`. The database wakes the job when the
 * last child ends (trigger `jobs_child_changed`).
 */
async function suspendForChildren(
  c: Claimed,
  children: ChildJob[],
  checkpoint: unknown,
  startedAt: number,
): Promise<boolean> {
  const rows = children.map((child) => {
    const def = getTaskDefinition(child.type);
    if (!def) throw new Error(`Unknown child job type: ${child.type}`);
    const input = def.inputSchema.parse(child.input);
    return {
      tenantId: c.job.tenantId,
      type: child.type,
      queue: child.queue ?? def.queue,
      priority: c.job.priority,
      input: input as Prisma.InputJsonValue,
      inputHash: hashInput(child.type, input),
      maxAttempts: def.retry.maxAttempts,
      parentId: c.job.id,
      createdById: c.job.createdById,
    };
  });
  return db().$transaction(async (tx) => {
    const held = await tx.$executeRaw`
      UPDATE jobs SET checkpoint = ${JSON.stringify(checkpoint)}::jsonb, waiting_since = now(), lease_owner = NULL,
             lease_expires_at = NULL, admitted_at = NULL, fencing_token = fencing_token + 1,
             max_attempts = max_attempts + 1, progress_stage = 'parts',
             progress_message = ${`0 of ${children.length} parts done`}, updated_at = now()
      WHERE id = ${c.job.id}::uuid AND fencing_token = ${c.token} AND status = 'running'
        AND cancel_requested_at IS NULL -- a cancel that raced the plan: no parts, the attempt ends cancelled`;
    if (held === 0) return false;
    await tx.job.createMany({ data: rows });
    await tx.jobAttempt.updateMany({
      where: { id: c.attemptId, outcome: "running" },
      data: { outcome: "waiting", finishedAt: new Date(), durationMs: Date.now() - startedAt },
    });
    return true;
  });
}

/** Failures that say nothing about the job itself: hand it back at once, without backoff. */
const NO_BACKOFF = new Set(["shutdown", "lease_lost", "crashed"]);

/**
 * What happens to a job after a failed attempt: dead-lettered (`failed`),
 * `cancelled`, or `retrying` at `runAt`.
 */
export function nextStateAfterFailure(
  def: Pick<TaskDefinition, "retry">,
  attempts: number,
  maxAttempts: number,
  failure: Pick<Classified, "errorClass" | "retryAfterMs">,
  now = Date.now(),
): { status: "failed" | "cancelled" | "retrying"; runAt?: Date } {
  if (failure.errorClass === "cancelled") return { status: "cancelled" };
  if (failure.errorClass === "permanent" || attempts >= maxAttempts) return { status: "failed" };
  const delay = NO_BACKOFF.has(failure.errorClass) ? 0 : (failure.retryAfterMs ?? backoffMs(def.retry, attempts));
  return { status: "retrying", runAt: new Date(now + delay) };
}

async function recordFailure(
  c: Claimed,
  def: TaskDefinition,
  failure: Classified,
  startedAt: number,
): Promise<RunOutcome> {
  // A deploy's shutdown says nothing about the job: its budget grows by the
  // interrupted attempt (attempt numbers stay unique and rising).
  const interrupted = failure.errorClass === "shutdown";
  return db().$transaction(async (tx) => {
    // A cancel request wins over whatever else ended the attempt: a job asked
    // to stop must not be scheduled again (its next claim would refuse it).
    // Locked, so a cancel request cannot slip in between this read and the write below.
    const [current] = await tx.$queryRaw<{ cancelRequestedAt: Date | null }[]>`
      SELECT cancel_requested_at AS "cancelRequestedAt" FROM jobs WHERE id = ${c.job.id}::uuid FOR UPDATE`;
    if (current?.cancelRequestedAt && failure.errorClass !== "cancelled") {
      failure = { errorClass: "cancelled", message: "Cancelled on request", stack: null };
    }
    const next = nextStateAfterFailure(def, c.job.attempts, c.job.maxAttempts + (interrupted ? 1 : 0), failure);
    const { count } = await tx.job.updateMany({
      where: { id: c.job.id, fencingToken: c.token, status: "running" },
      data: {
        status: next.status,
        ...(interrupted ? { maxAttempts: { increment: 1 } } : {}),
        ...(next.status === "cancelled" ? { progressMessage: "Cancelled" } : {}),
        errorClass: failure.errorClass,
        errorMessage: failure.message,
        errorStack: failure.stack,
        leaseOwner: null,
        leaseExpiresAt: null,
        // A retry gives its slot back and waits for admission when it is due; one
        // without backoff (shutdown, lost lease) keeps its old place in line.
        ...(next.runAt
          ? { admittedAt: null, ...(next.runAt.getTime() > Date.now() ? { runAt: next.runAt } : {}) }
          : { finishedAt: new Date() }),
      },
    });
    await tx.jobAttempt.updateMany({
      where: { id: c.attemptId, outcome: "running" },
      data: {
        outcome: !count ? "lost" : interrupted ? "interrupted" : next.status === "cancelled" ? "cancelled" : "failed",
        finishedAt: new Date(),
        durationMs: Date.now() - startedAt,
        errorClass: failure.errorClass,
        errorMessage: failure.message,
        errorStack: failure.stack,
      },
    });
    if (!count) return "lost";
    return next.status;
  });
}

export type RunJobOptions = {
  workerId: string;
  /** The job's type when the caller knows it (graphile's task identifier): saves a lookup. */
  type?: string;
  /** Aborts the attempt (worker shutdown). */
  signal?: AbortSignal;
  log?: (line: string) => void;
};

/**
 * Runs one attempt of job `jobId`. Never throws for a handler's failure: the
 * outcome is recorded on the job and returned.
 */
export async function runJob(jobId: string, opts: RunJobOptions): Promise<RunOutcome> {
  const log = opts.log ?? ((line: string) => console.log(line));
  const head = opts.type
    ? { type: opts.type }
    : await db().job.findUnique({ where: { id: jobId }, select: { type: true } });
  if (!head) return "skipped";
  const def = getTaskDefinition(head.type);
  if (!def) {
    await db().job.updateMany({
      where: { id: jobId, status: { in: ["queued", "retrying"] } },
      data: {
        status: "failed",
        errorClass: "permanent",
        errorMessage: `No task is registered for type ${head.type}`,
        finishedAt: new Date(),
      },
    });
    return "failed";
  }
  const claimedAt = Date.now();
  const claimed = await claimJob(jobId, head.type, opts.workerId, def.leaseMs);
  if (!claimed) return "skipped";
  const tag = `[task:${def.type}] job ${jobId} attempt ${claimed.job.attempts}`;
  const startedAt = Date.now();

  const controller = new AbortController();
  const abort = (reason: AbortReason) => {
    if (!controller.signal.aborted) controller.abort(reason);
  };
  const leaseLost = () => abort(new AbortReason("lease_lost", "The lease was lost to another attempt"));
  const onShutdown = () => abort(new AbortReason("shutdown", "The worker shut down during the attempt"));
  opts.signal?.addEventListener("abort", onShutdown, { once: true });

  // Cancellation arrives through this process's one LISTEN connection.
  let unsubscribe: () => void = () => {};
  try {
    unsubscribe = await eventHub().subscribe({ jobId }, (e) => {
      if (e.cancelRequested) abort(new AbortReason("cancelled", "Cancelled on request"));
    });
  } catch (e) {
    log(`${tag} could not listen for cancellation (${(e as Error).message}); the heartbeat still checks`);
  }

  const timeout = setTimeout(
    () => abort(new AbortReason("timeout", `Timed out after ${def.timeoutMs} ms`)),
    def.timeoutMs,
  );
  // The lease as this process knows it, counted from before the claim was sent,
  // so it ends no later than the database's. Stop before it runs out: another
  // worker may then take the job, and two attempts must never run at once.
  let leaseValidUntil = claimedAt + def.leaseMs;
  const heartbeatEvery = Math.max(200, Math.floor(def.leaseMs / 3));
  const heartbeat = setInterval(() => {
    if (Date.now() > leaseValidUntil - heartbeatEvery / 2) {
      abort(new AbortReason("lease_lost", "The lease could not be renewed in time"));
      return;
    }
    const sentAt = Date.now();
    db().$queryRaw<{ cancel: boolean }[]>`
        UPDATE jobs SET heartbeat_at = now(), lease_expires_at = now() + make_interval(secs => ${def.leaseMs / 1000}::float8)
        WHERE id = ${jobId}::uuid AND fencing_token = ${claimed.token} AND status = 'running'
        RETURNING cancel_requested_at IS NOT NULL AS cancel`
      .then((rows) => {
        if (!rows[0]) return leaseLost();
        leaseValidUntil = sentAt + def.leaseMs;
        if (rows[0].cancel) abort(new AbortReason("cancelled", "Cancelled on request"));
      })
      .catch((e: Error) => log(`${tag} heartbeat failed: ${e.message}`));
  }, heartbeatEvery);
  const progress = makeProgressWriter(jobId, claimed.token, leaseLost);

  try {
    const parsed = def.inputSchema.safeParse(claimed.job.input);
    if (!parsed.success) {
      const fields = parsed.error.issues.map((i) => `${i.path.join(".") || "(input)"}: ${i.message}`).join("; ");
      const outcome = await recordFailure(
        claimed,
        def,
        { errorClass: "permanent", message: `Invalid job input: ${fields}`, stack: null },
        startedAt,
      );
      log(`${tag} ${outcome}: invalid input`);
      return outcome;
    }
    try {
      if (Date.now() > leaseValidUntil - heartbeatEvery / 2) {
        abort(new AbortReason("lease_lost", "The lease ran out before the handler could start"));
      }
      if (controller.signal.aborted) throw controller.signal.reason;
      const result = await def.handler({
        job: toJobInfo(claimed.job),
        input: parsed.data,
        signal: controller.signal,
        progress: (u) => progress.update(u),
        lastCheckpoint: claimed.job.checkpoint ?? null,
        checkpoint: async (value) => {
          const count = await db().$executeRaw`
            UPDATE jobs SET checkpoint = ${JSON.stringify(value)}::jsonb, updated_at = now()
            WHERE id = ${jobId}::uuid AND fencing_token = ${claimed.token} AND status = 'running'`;
          if (count === 0) {
            leaseLost();
            throw controller.signal.reason;
          }
        },
        idempotencyKey: `job:${jobId}`,
        waitForChildren: async (children, checkpoint) => {
          await progress.close();
          if (controller.signal.aborted) throw controller.signal.reason;
          if (!(await suspendForChildren(claimed, children, checkpoint, startedAt))) {
            leaseLost();
            throw controller.signal.reason;
          }
          throw new WaitingForChildren(children.length);
        },
      });
      if (controller.signal.aborted) throw controller.signal.reason;
      await progress.close();
      const ok = await recordSuccess(claimed, def, result, startedAt);
      log(
        `${tag} ${ok ? "succeeded" : "finished but its lease was lost; result discarded"} in ${Date.now() - startedAt} ms`,
      );
      return ok ? "succeeded" : "lost";
    } catch (err) {
      await progress.close();
      if (err instanceof WaitingForChildren) {
        log(`${tag} waiting for ${err.children} child jobs`);
        return "waiting";
      }
      const failure = classifyError(err, controller.signal);
      const outcome = await recordFailure(claimed, def, failure, startedAt);
      log(`${tag} ${outcome} (${failure.errorClass}): ${failure.message}`);
      return outcome;
    }
  } finally {
    clearTimeout(timeout);
    clearInterval(heartbeat);
    unsubscribe();
    opts.signal?.removeEventListener("abort", onShutdown);
  }
}
