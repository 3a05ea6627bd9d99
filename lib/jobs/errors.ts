import { DeferredError } from "../downstream";

/**
 * Error classes a handler can throw to say how a failure should be treated.
 * Anything else is `retryable`.
 */
export type ErrorClass =
  | "permanent"
  /** A task's own retry schedule ran out on a failure that was worth retrying (HTTP 500s): dead-letter now. */
  | "exhausted"
  | "retryable"
  | "rate_limited"
  | "timeout"
  | "cancelled"
  | "lease_lost"
  | "shutdown"
  | "crashed"
  /** The downstream guard held the call back: the job waits without spending an attempt. */
  | "deferred";

/** Retrying cannot help (bad input, authorization, a 4xx from a downstream): dead-letter at once. */
export class PermanentError extends Error {
  readonly errorClass = "permanent" as const;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "PermanentError";
  }
}

/**
 * A task that keeps its own retry schedule (a webhook delivery's requests) gave up: the cause
 * was transient (an HTTP 500, no answer), not the input, so the job is dead-lettered as
 * `exhausted`, not `permanent`. `tries`: how many times it tried.
 */
export class GaveUpError extends Error {
  readonly errorClass = "exhausted" as const;
  constructor(
    message: string,
    readonly tries: number,
  ) {
    super(message);
    this.name = "GaveUpError";
  }
}

/** Worth retrying, no sooner than `retryAfterMs` when given (a task's own retry schedule). */
export class RetryableError extends Error {
  readonly errorClass = "retryable" as const;
  constructor(
    message: string,
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = "RetryableError";
  }
}

/** A downstream asked us to slow down; retry no sooner than retryAfterMs. */
export class RateLimitedError extends Error {
  readonly errorClass = "rate_limited" as const;
  constructor(
    message: string,
    readonly retryAfterMs: number,
  ) {
    super(message);
    this.name = "RateLimitedError";
  }
}

/** Why an attempt's AbortSignal fired. */
export class AbortReason extends Error {
  constructor(
    readonly errorClass: "timeout" | "cancelled" | "lease_lost" | "shutdown",
    message: string,
  ) {
    super(message);
    this.name = "AbortReason";
  }
}

export type Classified = { errorClass: ErrorClass; message: string; stack: string | null; retryAfterMs?: number };

/** Classifies a thrown value; `signal.reason` wins when the attempt was aborted. */
export function classifyError(err: unknown, signal?: AbortSignal): Classified {
  const reason = signal?.aborted ? signal.reason : undefined;
  if (reason instanceof AbortReason) {
    return { errorClass: reason.errorClass, message: reason.message, stack: null };
  }
  const e = err instanceof Error ? err : new Error(String(err));
  const stack = e.stack ?? null;
  if (e instanceof PermanentError) return { errorClass: "permanent", message: e.message, stack };
  if (e instanceof GaveUpError) return { errorClass: "exhausted", message: e.message, stack: null };
  if (e instanceof DeferredError)
    return { errorClass: "deferred", message: e.message, stack: null, retryAfterMs: e.delayMs };
  if (e instanceof RetryableError && e.retryAfterMs !== undefined)
    return { errorClass: "retryable", message: e.message, stack, retryAfterMs: e.retryAfterMs };
  if (e instanceof RateLimitedError)
    return { errorClass: "rate_limited", message: e.message, stack, retryAfterMs: e.retryAfterMs };
  return { errorClass: "retryable", message: e.message || e.name, stack };
}

/** A Retry-After header (seconds, or an HTTP date) in ms from `now`; null when absent or unreadable. */
export function parseRetryAfter(value: string | null | undefined, now = Date.now()): number | null {
  if (!value) return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

/**
 * The error a handler should throw for a downstream HTTP answer: 429 is
 * rate-limited (honouring Retry-After, in seconds or as an HTTP date), other
 * 4xx are permanent (408 aside: a timeout), 5xx and anything else retryable.
 */
export function errorForHttpStatus(status: number, what: string, retryAfter?: string | null, now = Date.now()): Error {
  const message = `${what} answered HTTP ${status}`;
  if (status === 429) {
    return new RateLimitedError(message, parseRetryAfter(retryAfter, now) ?? 60_000);
  }
  if (status >= 400 && status < 500 && status !== 408) return new PermanentError(message);
  return new Error(message);
}
