/** The one vocabulary of states lives in lib/jobs/states.ts (the CLI's commands use it too). */
export { STATE_LABELS, stateLabel, stateMeaning, type StateName } from "../jobs/states";

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
