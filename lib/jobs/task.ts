/**
 * What a task type declares, and what its handler receives. A workload (a
 * folder of lib/ such as lib/exports) defines its task types with
 * `defineTask` and is registered once in lib/workloads; the engine finds the
 * definitions by type through lib/jobs/registry.ts and never imports a workload.
 */
import type { Command } from "commander";
import type { z } from "zod";
import type { ApiDescription } from "../api-doc";
import type { Prisma, SqlClient } from "../db";
import type { DownstreamLimits, Permit } from "../downstream";
import type { Settings } from "../env";
import type { Service } from "../runtime/service";
import type { CliKit } from "./cli-kit";

export type { SqlClient } from "../db";

/**
 * A queue's name: the engine's (interactive, bulk: lib/jobs/queues.ts) or one a
 * workload brings in its manifest (webhooks). The registry knows them all
 * (`queueNames()`); there is no fixed list.
 */
export type QueueName = string;

/** At or above `warning` a health signal warns; at or above `behind` its queue (or tenant) is falling behind. */
export type Threshold = { warning: number; behind: number };

/**
 * A queue a manifest brings: the engine seeds its `queues` row from `tenantCap` and
 * `window` (only where the database holds none), `npm start` runs a worker pool for it,
 * and the console's health reads it against `health`.
 */
export type QueueSpec = {
  /** snake_case or a plain word; jobs name it in `queue`. */
  name: string;
  /** One line for the help and the docs: what waits in it. */
  description: string;
  /** The first per-tenant cap (jobs of one tenant admitted or running at once). */
  tenantCap(): number;
  /** The first window (jobs of all tenants admitted or running at once). */
  window(): number;
  /** Seconds: how old the oldest ready job, and the 95th percentile start latency, may get. */
  health: { oldestReadyAge: Threshold; startLatencyP95: Threshold };
  /** Slots of its worker pool under `npm start` (default WORKER_CONCURRENCY). */
  concurrency?(): number;
};

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

/**
 * A table of a workload whose rows belong to one job (`job_id`, a foreign key ON DELETE
 * CASCADE): they go when the job goes (lib/retention prunes jobs and never names it).
 */
export type WorkloadTable = {
  name: string;
  /** Its column naming the job (default `job_id`); `id` on `jobs` itself: what a job's own row holds (its result). */
  jobColumn?: string;
  /**
   * A condition on one of its rows (as `t`, its job as `j`) under which the job may not be
   * pruned yet (an import whose staging table the cleanup has not dropped).
   */
  keepsJobWhile?: string;
  /** A storage key (an expression on `t`) to remove once the row is gone, where not null. */
  storedKey?: string;
};

/**
 * Rows a workload keeps beside its jobs but not keyed by one (webhook messages, schedule
 * events): the pruner calls `prune` with the tenant's job retention cutoff; it deletes at
 * most `limit` rows and returns how many.
 */
export type HistoryTable = {
  name: string;
  prune(tx: Prisma.TransactionClient, tenantId: string, cutoff: Date, limit: number): Promise<number>;
};

/** A workload's commands in the CLI program (scripts/cli), given the program and its helpers. */
export type CliCommands = (program: Command, kit: CliKit) => void;

/**
 * A folder of lib/ that brings work to the engine: the manifest says everything the engine,
 * the worker, `npm start`, the pruner and the CLI need to know of it, so adding one is one
 * line in lib/workloads.
 */
export type Workload = {
  name: string;
  // `any`: a workload holds definitions of different input and result types.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  tasks: readonly TaskDefinition<any, any>[];
  /** Queues it brings (its tasks may also run on the engine's: interactive, bulk). */
  queues?: readonly QueueSpec[];
  /** Its long-running parts (cleanups, schedulers): every worker process starts them. */
  services?: readonly Service[];
  /** Its configuration (lib/env.ts `defineSettings`): validated with the rest at start. */
  settings?: Settings<object>;
  /** Its job-keyed tables (pruned with their job by cascade). */
  tables?: readonly WorkloadTable[];
  /** Its history tables, pruned after the tenant's job retention. */
  history?: readonly HistoryTable[];
  /**
   * Jobs a user owns besides those they created (`jobs.created_by_id`, which a schedule's runs
   * carry too): an SQL condition on the job `j`, given the SQL expression of the user's id
   * (webhooks: the deliveries to endpoints the user made). A member's job lists show what they own.
   */
  ownedJobs?: (userId: string) => string;
  /** Its commands in `npm run cli`. */
  cli?: CliCommands;
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
