/**
 * What a task type declares, and what its handler receives.
 */
import type { z } from "zod";
import type { Prisma } from "../db";

/** interactive: somebody is waiting (their own export request); bulk: export parts, schedules, replays. */
export const QUEUES = ["interactive", "bulk"] as const;
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
  stage?: string;
  message?: string;
};

export type JobInfo = {
  id: string;
  tenantId: string;
  type: string;
  attempt: number;
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
  /** The checkpoint an earlier attempt saved, or null. */
  lastCheckpoint: unknown;
  /** Stable across attempts: use it for external calls that must not repeat. */
  idempotencyKey: string;
  /**
   * Fans out: enqueues these child jobs, saves `checkpoint`, and ends this
   * attempt without finishing the job. The job then holds no worker slot and no
   * lease; when the last child has ended it is run again (a new attempt that
   * does not count against its retry budget) with `lastCheckpoint` set, to
   * gather the children's results. Never returns.
   */
  waitForChildren(children: ChildJob[], checkpoint: unknown): Promise<never>;
};

/** A child job a handler fans out into (see `waitForChildren`). */
export type ChildJob = { type: string; input: unknown; queue?: QueueName };

export type TaskDefinition<I = unknown, R = unknown> = {
  /** snake_case; graphile-worker's task identifier is `<queue>:<type>`. */
  type: string;
  /** The queue its jobs run on unless the enqueuer names another. */
  queue: QueueName;
  inputSchema: z.ZodType<I>;
  /** Top-level input fields shown as "[redacted]" in the operator console (secrets, personal data). */
  sensitive?: readonly string[];
  retry: RetryPolicy;
  /** An attempt running longer than this is aborted and counts as a retryable failure. */
  timeoutMs: number;
  /** How long a claim holds without a heartbeat. */
  leaseMs: number;
  /** Returns the job's result (stored as JSON). */
  handler(ctx: JobContext<I>): Promise<R>;
  /**
   * Records what the attempt produced, inside the transaction that marks the
   * job succeeded, and only if this attempt still holds the lease (its fencing
   * token matched): a stale attempt's output is never recorded.
   */
  commit?(tx: Prisma.TransactionClient, job: JobInfo, result: R): Promise<void>;
};

/** Identity helper that keeps the input type of a definition. */
export function defineTask<I, R>(def: TaskDefinition<I, R>): TaskDefinition<I, R> {
  return def;
}
