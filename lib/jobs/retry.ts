import type { RetryPolicy } from "./task";

/**
 * Delay before the next attempt, after `attempt` attempts have failed (1-based):
 * min(max, initial × multiplier^(attempt-1)), with full jitter when asked.
 */
export function backoffMs(policy: RetryPolicy, attempt: number, random: () => number = Math.random): number {
  const exp = policy.initialBackoffMs * Math.pow(policy.multiplier, Math.max(0, attempt - 1));
  const capped = Math.min(policy.maxBackoffMs, exp);
  return policy.jitter === "full" ? Math.floor(random() * capped) : Math.floor(capped);
}
