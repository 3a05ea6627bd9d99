/**
 * The one vocabulary of states: every page, the CLI (`conveyor jobs …`) and the docs (docs/API.md,
 * "States") say a job's state with these words and mean the same by them. The API's `status`
 * values stay as documented; `stateLabel` is what a person reads for each. A unit test holds that
 * every status the API documents (`jobStatuses`) has a label here and that the docs' table lists
 * exactly these. Other lists (webhook deliveries) may add their own states through `stateLabel`
 * too: a state not in the map reads as itself.
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
} as const;

export type StateName = keyof typeof STATE_LABELS;

/** The word for a state ("retrying"); a state the map does not know reads as itself. */
export function stateLabel(status: string): string {
  return (STATE_LABELS as Record<string, { label: string }>)[status]?.label ?? status;
}

/** What a state means, in a sentence part (a badge's title; the docs' table). */
export function stateMeaning(status: string): string | undefined {
  return (STATE_LABELS as Record<string, { meaning: string }>)[status]?.meaning;
}

/**
 * One status palette for the whole console: badges, charts and legends use
 * these, so "running" and "succeeded" look the same on every page.
 */
export const STATUS_PALETTE = {
  scheduled: { badge: "bg-slate-100 text-slate-700", chart: "#64748b" },
  queued: { badge: "bg-slate-100 text-slate-700", chart: "#94a3b8" },
  waiting: { badge: "bg-slate-100 text-slate-700", chart: "#94a3b8" },
  paused: { badge: "bg-amber-100 text-amber-900 ring-1 ring-amber-300", chart: "#d97706" },
  running: { badge: "bg-sky-100 text-sky-800", chart: "#0284c7" },
  retrying: { badge: "bg-amber-100 text-amber-800", chart: "#f59e0b" },
  succeeded: { badge: "bg-emerald-100 text-emerald-800", chart: "#059669" },
  failed: { badge: "bg-red-100 text-red-800", chart: "#dc2626" },
  cancelled: { badge: "bg-slate-200 text-slate-700", chart: "#475569" },
  expired: { badge: "bg-slate-200 text-slate-600", chart: "#64748b" },
  dead: { badge: "bg-red-100 text-red-800", chart: "#dc2626" },
} as const;

export type PaletteStatus = keyof typeof STATUS_PALETTE;

export function statusBadgeClass(status: string): string {
  return (STATUS_PALETTE as Record<string, { badge: string }>)[status]?.badge ?? STATUS_PALETTE.queued.badge;
}

export function statusColor(status: string): string {
  return (STATUS_PALETTE as Record<string, { chart: string }>)[status]?.chart ?? STATUS_PALETTE.queued.chart;
}
