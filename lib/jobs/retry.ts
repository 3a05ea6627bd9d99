import type { Classified } from "./errors";
import type { RetryPolicy, TaskDefinition } from "./task";

/**
 * Delay before the next attempt, after `attempt` attempts have failed (1-based):
 * min(max, initial × multiplier^(attempt-1)), with full jitter when asked.
 */
export function backoffMs(policy: RetryPolicy, attempt: number, random: () => number = Math.random): number {
  const exp = policy.initialBackoffMs * Math.pow(policy.multiplier, Math.max(0, attempt - 1));
  const capped = Math.min(policy.maxBackoffMs, exp);
  return policy.jitter === "full" ? Math.floor(random() * capped) : Math.floor(capped);
}

/** Failures that say nothing about the job itself: hand it back at once, without backoff. */
const NO_BACKOFF = new Set(["shutdown", "lease_lost", "crashed"]);

/**
 * What happens to a job after a failed attempt: dead-lettered (`failed`),
 * `cancelled`, or `retrying` after `delayMs` (0: at once, keeping its place in line).
 */
export function nextStateAfterFailure(
  def: Pick<TaskDefinition, "retry"> | undefined,
  attempts: number,
  maxAttempts: number,
  failure: Pick<Classified, "errorClass" | "retryAfterMs">,
): { status: "failed" | "cancelled" | "retrying"; delayMs: number } {
  if (failure.errorClass === "cancelled") return { status: "cancelled", delayMs: 0 };
  // An unknown type (its workload is gone) can never run: dead-letter it.
  const final = failure.errorClass === "permanent" || failure.errorClass === "exhausted";
  if (!def || final || attempts >= maxAttempts) return { status: "failed", delayMs: 0 };
  const delay = NO_BACKOFF.has(failure.errorClass) ? 0 : (failure.retryAfterMs ?? backoffMs(def.retry, attempts));
  return { status: "retrying", delayMs: delay };
}
