/**
 * What a task type declares, and what its handler receives. A workload (a
 * folder of lib/ such as lib/exports) defines its task types with
 * `defineTask` and is registered once in lib/workloads; the engine finds the
 * definitions by type through lib/jobs/registry.ts and never imports a workload.
 */
import type { z } from "zod";
import type { ApiDescription } from "../api-doc";
import type { SqlClient } from "../db";
import type { DownstreamLimits, Permit } from "../downstream";

export type { SqlClient } from "../db";

/**
 * interactive: somebody is waiting (their own export request); bulk: export
 * parts, schedules, replays; webhooks: deliveries to tenants' endpoints (their
 * own pool, so a slow endpoint never takes an export's slot).
 */
export const QUEUES = ["interactive", "bulk", "webhooks"] as const;
export type QueueName = (typeof QUEUES)[number];

export type RetryPolicy = {
  maxAttempts: number;
  initialBackoffMs: number;
  maxBackoffMs: number;
  multiplier: number;
  /** "full": a uniformly random delay in [0, computed backoff]. */
  jitter: "full" | "none";
};

export type ProgressUpdate = {
  done?: number;
  total?: number | null;
  unit?: string;
  /** The stage's key ("parse", "exporting"): the job's kind words it (`lib/client/kinds`). */
  stage?: string;
  /**
   * The stage's own counts, a small flat object ({ good: 10, bad: 2 }): fields,
   * never sentences. Replaces the detail written before; left out, it stays.
   */
  detail?: Record<string, number | string | boolean>;
  /** Bytes produced so far. */
  bytes?: number;
};

export type JobInfo = {
  id: string;
  tenantId: string;
  type: string;
  /** 1-based; a run after waiting for child jobs continues the same attempt. */
  attempt: number;
  /** 0 for the attempt's first run, then 1, 2… for each run after its children ended. */
  resume: number;
  maxAttempts: number;
  createdById: string | null;
};

export type JobContext<I> = {
  job: JobInfo;
  input: I;
  /** Fired on timeout, lost lease, cancellation or shutdown. */
  signal: AbortSignal;
  /** Records progress; writes are throttled and never move `done` backwards. */
  progress(update: ProgressUpdate): void;
  /** Saves where the handler got to (JSON); the next attempt finds it in `lastCheckpoint`. */
  checkpoint(value: unknown): Promise<void>;
  /** The checkpoint an earlier run saved, or null. */
  lastCheckpoint: unknown;
  /** Stable across attempts: use it for external calls that must not repeat. */
  idempotencyKey: string;
  /**
   * Runs `fn` in a transaction that holds this attempt's fence: the job row is
   * locked first, and if another attempt took the job over, `fn` never runs and
   * the attempt is aborted (lease lost). For writes that must not come from a
   * stale attempt outside the final success (e.g. a partial result).
   */
  fenced<T>(fn: (tx: SqlClient) => Promise<T>): Promise<T>;
  /**
   * Fans out: enqueues these child jobs, saves `checkpoint`, and suspends this
   * attempt without finishing the job. The job then holds no worker slot and no
   * lease; when the last child has ended the same attempt resumes (`job.resume`
   * + 1, no retry spent) with `lastCheckpoint` set, to gather the children's
   * results. Never returns.
   */
  waitForChildren(children: ChildJob[], checkpoint: unknown, opts?: WaitOptions): Promise<never>;
  /**
   * A permit to call downstream `key` (lib/downstream: rate limit, concurrency,
   * Retry-After, circuit breaker, fleet-wide). Release it with the call's
   * outcome. When the call may not happen now it throws a DeferredError: let it
   * propagate, and the job waits without spending an attempt.
   */
  downstream(key: string, limits: DownstreamLimits): Promise<Permit>;
};

/**
 * A child job a handler fans out into (see `waitForChildren`). `index`: its
 * place among the parent's children (default: its place in this fan-out) —
 * a pipeline numbers its stages this way.
 */
export type ChildJob = { type: string; input: unknown; queue?: QueueName; index?: number };

/** `rollup: false`: the parent keeps its own progress instead of the sum of its children's. */
export type WaitOptions = { rollup?: boolean };

export type TaskDefinition<I = unknown, R = unknown> = {
  /** snake_case; graphile-worker's task identifier is `<queue>:<type>`. */
  type: string;
  /** The queue its jobs run on unless the enqueuer names another. */
  queue: QueueName;
  inputSchema: z.ZodType<I>;
  /** Input field names shown as "[redacted]" everywhere, at any depth, and never searched (secrets, personal data). */
  sensitive?: readonly string[];
  retry: RetryPolicy;
  /** An attempt running longer than this is aborted and counts as a retryable failure, in ms. */
  timeoutMs: number;
  /** How long a claim holds without a heartbeat, in ms. */
  leaseMs: number;
  /** Returns the job's result (stored as JSON). */
  handler(ctx: JobContext<I>): Promise<R>;
  /**
   * Records what the attempt produced, inside the transaction that marks the
   * job succeeded, and only if this attempt still holds the lease (its fencing
   * token matched): a stale attempt's output is never recorded.
   */
  commit?(tx: SqlClient, job: JobInfo, result: R): Promise<void>;
  /**
   * Present when a schedule may run this task type (lib/schedules): the input a
   * schedule keeps, which may hold placeholders (an export's `filter.since:
   * "lastRun"`), and how it becomes one run's concrete input.
   */
  /**
   * The checkpoint a replay of a dead job starts from (null: from the start).
   * A pipeline resumes at its failed stage, keeping what earlier stages produced.
   */
  replayCheckpoint?(checkpoint: unknown): unknown;
  /**
   * Where a file the job recorded (export_files) downloads from, when not the
   * export route (an import's errors file: its own route).
   */
  fileUrl?(jobId: string, fileName: string): string;
  schedulable?: {
    inputSchema: z.ZodType<unknown>;
    runInput(input: unknown, run: ScheduledRun): unknown;
    /** Its runs also pass the export_bytes quota (they store files), as a request to create one does. */
    exportBytes?: boolean;
  };
  /**
   * No request makes jobs of this type: a schedule of it is refused through the API and the CLI
   * (and not offered); only code in a process of ours makes them (tests, benchmarks, chaos runs).
   */
  internal?: boolean;
};

/** The occurrence a schedule's run is for, and the one of the run before it (null: its first). */
export type ScheduledRun = { scheduledFor: Date; previousScheduledFor: Date | null };

/** Work a workload's workers do on a timer (cleanups, schedulers); one process at a time if it takes a maintenance lock. */
export type PeriodicTask = {
  /** For log lines: `[name] …`. */
  name: string;
  /** How often each worker process runs it, in ms (read at start). */
  everyMs(): number;
  /** One tick; returns lines worth logging. A throw is logged, never fatal. */
  run(): Promise<string[]>;
};

/** A folder of lib/ that brings task types (and their periodic upkeep) to the engine. */
export type Workload = {
  name: string;
  // `any`: a workload holds definitions of different input and result types.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  tasks: readonly TaskDefinition<any, any>[];
  periodic?: readonly PeriodicTask[];
  /** Its routes, described for the OpenAPI document (its folder's openapi.ts; lib/api-doc.ts). */
  openapi?: ApiDescription;
};

/** Identity helper that keeps the input and result types of a definition. */
export function defineTask<I, R>(def: TaskDefinition<I, R>): TaskDefinition<I, R> {
  return def;
}

/** Identity helper for a workload's definition. */
export function defineWorkload(workload: Workload): Workload {
  return workload;
}
