import type { jobStatuses } from "./queries";

/**
 * The one vocabulary of states: every page (through lib/client/status.ts), the CLI (`jobs …`,
 * `imports …`, `schedules list`, `reports get`) and the docs (docs/API.md, "States") say a job's
 * state with these words and mean the same by them. The API's `status` values stay as documented;
 * `stateLabel` is what a person reads for each. It sits in lib/jobs so that the workloads' CLI
 * commands may import it as well as the pages. The type and a unit test hold that every status the
 * API documents (`jobStatuses`) has a label here; the test, that the docs' table lists exactly
 * these. Other lists (webhook deliveries) may say their own states through `stateLabel` too: a
 * state the map does not know reads as itself.
 */
export const STATE_LABELS = {
  scheduled: { label: "scheduled", meaning: "waits for the time it was asked to start at" },
  queued: { label: "queued", meaning: "waits for a worker" },
  running: { label: "running", meaning: "a worker is doing it now" },
  retrying: { label: "retrying", meaning: "an attempt failed; the next one waits for its backoff" },
  paused: { label: "paused", meaning: "held by a pause (of its queue, its tenant or everything) until resumed" },
  succeeded: { label: "succeeded", meaning: "done; its result is ready" },
  failed: { label: "failed", meaning: "out of attempts, or a permanent error: it will not run again by itself" },
  cancelled: { label: "cancelled", meaning: "stopped because someone asked" },
  expired: { label: "expired", meaning: "done, but its files are gone (kept for a while, then deleted)" },
} as const satisfies Record<(typeof jobStatuses)[number] | "paused", { label: string; meaning: string }>;

export type StateName = keyof typeof STATE_LABELS;

/** The word for a state ("retrying"); a state the map does not know reads as itself. */
export function stateLabel(status: string): string {
  return (STATE_LABELS as Record<string, { label: string }>)[status]?.label ?? status;
}

/** What a state means, in a sentence part (a badge's title; the docs' table). */
export function stateMeaning(status: string): string | undefined {
  return (STATE_LABELS as Record<string, { meaning: string }>)[status]?.meaning;
}
