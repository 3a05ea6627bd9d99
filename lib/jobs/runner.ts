/**
 * Runs one attempt of a job: claim it (a lease and a fresh fencing token),
 * guard it (heartbeat, cancel, timeout, shutdown), call its task's handler,
 * then record the outcome. Every write after the claim carries the token, so a
 * stale attempt changes nothing, and a write that finds its token stale aborts
 * the handler. Each statement is a file of lib/jobs/sql/, all run through one
 * client: the bookkeeping pool.
 */
import { v7 as uuidv7 } from "uuid";
import { bookkeepingPool, inTransaction } from "../db";
import { acquire } from "../downstream";
import {
  activeSpan,
  contextFromCarrier,
  currentTraceCarrier,
  failSpan,
  SpanKind,
  SpanStatusCode,
  withSpan,
} from "../tracing";
import { guardAttempt, type AttemptGuard } from "./attempt-guard";
import { withLogContext, logger } from "../log";
import { hashInput } from "./enqueue";
import { classifyError, type Classified } from "./errors";
import { createProgressWriter, type ProgressWriter } from "./progress-writer";
import { getTaskDefinition } from "./registry";
import { nextStateAfterFailure } from "./retry";
import { holdFence } from "./sql/fence";
import { saveCheckpoint } from "./sql/checkpoint";
import { Batcher } from "../batcher";
import { jobTypeOf } from "./sql/reject";
import {
  claimJobs,
  failJobs,
  type FailedAttempt,
  type FailStatus,
  rejectUnregistered,
  releaseUnclaimable,
  succeedJob,
  succeedJobs,
  suspendForChildren,
  type ChildRow,
  type ClaimedJob,
  type ClaimRequest,
  type SuccessRecord,
} from "./transitions";
import type { ChildJob, JobContext, JobInfo, TaskDefinition } from "./task";

export type RunOutcome = "succeeded" | "failed" | "retrying" | "cancelled" | "skipped" | "lost" | "waiting";

export type RunJobOptions = {
  workerId: string;
  /** The job's type when the caller knows it (graphile's task identifier): saves a lookup. */
  type?: string;
  /** Aborts the attempt (worker shutdown). */
  signal?: AbortSignal;
  /** Where the attempt's lines go instead of the process's log (tests). */
  log?: (line: string) => void;
};

type Level = "info" | "warn" | "error";

/** The level of an attempt's closing line: what an operator should look at is a warning or an error. */
const levelOf: Record<RunOutcome, Level> = {
  succeeded: "info",
  waiting: "info",
  cancelled: "info",
  skipped: "info",
  retrying: "warn",
  lost: "warn",
  failed: "error",
};

/**
 * The process's claims and plain successes (those without a commit step) go to
 * Postgres in batches: one statement for the calls that arrived while earlier
 * ones ran (lib/batcher.ts). Each job's checks and fence are its own. A
 * batch locks several rows, so it can meet another multi-row writer (a pause
 * taking jobs back, a sibling's parent update) in a deadlock: Postgres aborts
 * one side, and the statement, atomic, is simply sent again.
 */
async function retryingDeadlocks<T>(run: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (err) {
      if ((err as { code?: string }).code !== "40P01" || attempt >= 3) throw err;
    }
  }
}
const claims = new Batcher<ClaimRequest, ClaimedJob | null>(
  (batch) => retryingDeadlocks(() => claimJobs(bookkeepingPool(), batch)),
  { maxBatch: 500, maxInFlight: 4 },
);
const successes = new Batcher<SuccessRecord, boolean>(
  (batch) => retryingDeadlocks(() => succeedJobs(bookkeepingPool(), batch)),
  { maxBatch: 500, maxInFlight: 4 },
);
/** Failed attempts, and at shutdown every running one handed back: a statement per batch. */
const failures = new Batcher<FailedAttempt, FailStatus>(
  (batch) => retryingDeadlocks(() => failJobs(bookkeepingPool(), batch)),
  { maxBatch: 500, maxInFlight: 4 },
);

/** Thrown out of a handler by `waitForChildren` once the fan-out is recorded. */
class Suspended extends Error {
  constructor(readonly children: number) {
    super(`waiting for ${children} child jobs`);
  }
}

/**
 * Runs one attempt of job `jobId`. Never throws for a handler's failure: the
 * outcome is recorded on the job and returned. Everything logged meanwhile, by
 * the runner or the handler and what it calls, carries `jobId` and `workerId`,
 * and from the claim on `tenantId` and `attempt`.
 */
export function runJob(jobId: string, opts: RunJobOptions): Promise<RunOutcome> {
  return withLogContext({ jobId, workerId: opts.workerId }, () => runAttempt(jobId, opts));
}

async function runAttempt(jobId: string, opts: RunJobOptions): Promise<RunOutcome> {
  const emit = (level: Level, line: string, fields: Record<string, unknown> = {}) =>
    opts.log ? opts.log(line) : logger[level](fields, line);
  const log = (line: string) => emit("warn", line);
  const client = bookkeepingPool();
  const type = opts.type ?? (await jobTypeOf(client, jobId));
  if (!type) return "skipped";
  const def = getTaskDefinition(type);
  if (!def) {
    await rejectUnregistered(client, jobId, type);
    emit("error", `[jobs] job ${jobId}: no task type ${type} is registered in this worker; failed`);
    return "failed";
  }

  const claimedAt = performance.now();
  const claimed = await claims.push({ jobId, type, workerId: opts.workerId, leaseMs: def.leaseMs });
  if (!claimed) {
    await releaseUnclaimable(client, jobId);
    return "skipped";
  }
  return withLogContext({ tenantId: claimed.tenantId, attempt: claimed.attempt }, () => {
    const tag = `[task:${def.type}] job ${jobId} attempt ${claimed.attempt}${claimed.resume ? ` (resumed)` : ""}`;
    // The attempt's span continues the trace stored with the job (the request that made it, or the
    // parent attempt that fanned it out), whichever worker runs it; active for the handler's own spans.
    return withSpan(
      `run ${def.type}`,
      {
        "conveyor.job.id": jobId,
        "conveyor.job.type": def.type,
        "conveyor.job.queue": claimed.queue,
        "conveyor.tenant.id": claimed.tenantId,
        "conveyor.job.attempt": claimed.attempt,
        "conveyor.job.resume": claimed.resume,
        "conveyor.worker.id": opts.workerId,
      },
      async (span) => {
        const startedAt = performance.now();
        const guard = await guardAttempt({
          jobId,
          token: claimed.fencingToken,
          leaseMs: def.leaseMs,
          timeoutMs: def.timeoutMs,
          claimedAt,
          shutdown: opts.signal,
          log,
          tag,
        });
        const progress = createProgressWriter(jobId, claimed.fencingToken, guard.leaseLost, log);
        try {
          const outcome = await attempt(def, claimed, guard, progress);
          span.setAttribute("conveyor.job.outcome", outcome.outcome);
          if (outcome.outcome === "lost") span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.line });
          const ms = Math.round(performance.now() - startedAt);
          emit(levelOf[outcome.outcome], `${tag} ${outcome.line} in ${ms} ms`, {
            task: def.type,
            outcome: outcome.outcome,
            ms,
          });
          return outcome.outcome;
        } finally {
          await progress.close();
          guard.stop();
        }
      },
      { kind: SpanKind.CONSUMER, parent: contextFromCarrier(claimed.traceContext) },
    );
  });
}

/** A failed attempt on its span: an error when it failed or will retry; a cancel or a shutdown is only noted. */
function noteFailure(err: unknown, failure: Classified, outcome: RunOutcome): void {
  const span = activeSpan();
  span.setAttribute("conveyor.job.error_class", failure.errorClass);
  if (outcome === "failed" || outcome === "retrying") failSpan(span, err, failure.message);
  else span.recordException(err instanceof Error ? err : new Error(String(err)));
}

async function attempt(
  def: TaskDefinition,
  claimed: ClaimedJob,
  guard: AttemptGuard,
  progress: ProgressWriter,
): Promise<{ outcome: RunOutcome; line: string }> {
  const parsed = def.inputSchema.safeParse(claimed.input);
  if (!parsed.success) {
    const fields = parsed.error.issues.map((i) => `${i.path.join(".") || "(input)"}: ${i.message}`).join("; ");
    const failure: Classified = { errorClass: "permanent", message: `Invalid job input: ${fields}`, stack: null };
    const outcome = await recordFailure(def, claimed, failure);
    noteFailure(new Error(failure.message), failure, outcome);
    return { outcome, line: `${outcome}: invalid input` };
  }
  try {
    guard.checkLease();
    if (guard.signal.aborted) throw guard.signal.reason;
    const result = await def.handler(contextFor(claimed, parsed.data, guard, progress));
    if (guard.signal.aborted) throw guard.signal.reason;
    await progress.close();
    const success = { jobId: claimed.id, token: claimed.fencingToken, attemptId: claimed.attemptId, result };
    const ok = def.commit
      ? await succeedJob(bookkeepingPool(), { ...success, commit: (tx) => def.commit!(tx, jobInfo(claimed), result) })
      : await successes.push(success);
    return ok
      ? { outcome: "succeeded", line: "succeeded" }
      : { outcome: "lost", line: "finished but its lease was lost; result discarded" };
  } catch (err) {
    await progress.close();
    if (err instanceof Suspended) return { outcome: "waiting", line: `waiting for ${err.children} child jobs` };
    const failure = classifyError(err, guard.signal);
    const outcome = await recordFailure(def, claimed, failure);
    noteFailure(err, failure, outcome);
    return { outcome, line: `${outcome} (${failure.errorClass}): ${failure.message}` };
  }
}

function jobInfo(c: ClaimedJob): JobInfo {
  return {
    id: c.id,
    tenantId: c.tenantId,
    type: c.type,
    attempt: c.attempt,
    resume: c.resume,
    maxAttempts: c.maxAttempts,
    createdById: c.createdById,
  };
}

/** What the handler gets: its job, input, signal, and the fenced ways to write. */
function contextFor(
  claimed: ClaimedJob,
  input: unknown,
  guard: AttemptGuard,
  progress: ProgressWriter,
): JobContext<unknown> {
  const client = bookkeepingPool();
  const token = claimed.fencingToken;
  const staleFence = (): never => {
    guard.leaseLost();
    throw guard.signal.reason;
  };
  return {
    job: jobInfo(claimed),
    input,
    signal: guard.signal,
    progress: (u) => progress.update(u),
    lastCheckpoint: claimed.checkpoint ?? null,
    idempotencyKey: `job:${claimed.id}`,
    downstream: (key, limits) => acquire(key, claimed.id, limits, client),
    async checkpoint(value) {
      if (!(await saveCheckpoint(client, claimed.id, token, value))) staleFence();
    },
    async fenced(fn) {
      return inTransaction(async (tx) => {
        if (!(await holdFence(tx, claimed.id, token))) staleFence();
        return fn(tx);
      }, client);
    },
    async waitForChildren(children, checkpoint, opts) {
      const rows = children.map(childRow);
      await progress.close();
      if (guard.signal.aborted) throw guard.signal.reason;
      const held = await suspendForChildren(client, {
        jobId: claimed.id,
        token,
        attemptId: claimed.attemptId,
        checkpoint,
        children: rows,
        rollup: opts?.rollup ?? true,
        // The children's attempts continue this attempt's trace: an export and its parts are one trace.
        traceContext: currentTraceCarrier(),
      });
      if (!held) staleFence();
      throw new Suspended(rows.length);
    },
  };
}

/** A child job as inserted: its definition's queue and budget, its input validated and hashed. */
function childRow(child: ChildJob): ChildRow {
  const def = getTaskDefinition(child.type);
  if (!def) throw new Error(`Unknown child job type: ${child.type}`);
  const input = def.inputSchema.parse(child.input);
  return {
    id: uuidv7(),
    type: child.type,
    queue: child.queue ?? def.queue,
    input,
    inputHash: hashInput(child.type, input),
    maxAttempts: def.retry.maxAttempts,
    index: child.index,
  };
}

/** A failed attempt: its next state from the task's policy; a shutdown's or a deferral's does not count against the budget. */
async function recordFailure(def: TaskDefinition, c: ClaimedJob, failure: Classified): Promise<RunOutcome> {
  // Neither a shutdown nor a deferral (the downstream guard held the call back) spends an attempt.
  const interrupted = failure.errorClass === "shutdown" || failure.errorClass === "deferred";
  const next = nextStateAfterFailure(def, c.attempt, c.maxAttempts + (interrupted ? 1 : 0), failure);
  const status = await failures.push({
    jobId: c.id,
    token: c.fencingToken,
    attemptId: c.attemptId,
    failure: {
      errorClass: failure.errorClass,
      message: failure.message,
      stack: failure.stack,
      next: next.status,
      delayMs: next.delayMs,
      interrupted,
    },
  });
  return status ?? "lost";
}
