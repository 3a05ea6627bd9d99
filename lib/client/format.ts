/** Wire → UI helpers: numbers, sizes, rates and times as people read them. */
import type { JobDto } from "../jobs/dto";
import { recentRate, timeLeftMs } from "../jobs/progress-rate";
import { progressMessage } from "./progress";

const nf = new Intl.NumberFormat("en-US");

export function formatCount(n: number): string {
  return nf.format(Math.round(n));
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ["KB", "MB", "GB", "TB"];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  return `${Math.floor(m / 60)}h ${m % 60}m`;
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const WEEKDAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];

/**
 * How a moment is written. `full`: "3 Dec 2026, 08:14:05 UTC+1" (the default, for a moment on
 * its own); `minute`: "Thu 3 Dec, 08:14 UTC+1", the year only when it is not this year's (a
 * schedule's runs); `clock`: "08:14:05", no date and no zone (a timeline that names its zone once);
 * `day`: "3 Dec 2026" (a window's edge that is midnight).
 */
export type TimeStyle = "full" | "minute" | "clock" | "day";

type ZonedParts = { y: number; mo: number; d: number; h: number; mi: number; s: number };

const partsFormats = new Map<string, Intl.DateTimeFormat>();
function zonedParts(at: Date, zone: string): ZonedParts {
  let f = partsFormats.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
      hourCycle: "h23",
    });
    partsFormats.set(zone, f);
  }
  const n: Record<string, number> = {};
  for (const p of f.formatToParts(at)) if (p.type !== "literal") n[p.type] = Number(p.value);
  return { y: n.year!, mo: n.month!, d: n.day!, h: n.hour! % 24, mi: n.minute!, s: n.second! };
}

const offsetFormats = new Map<string, Intl.DateTimeFormat>();
/**
 * A zone's name, one way everywhere: its offset from UTC at that moment ("UTC", "UTC-8",
 * "UTC+5:30"), never "PST" in one place and "GMT-8" in another.
 */
export function zoneLabel(zone: string, at: Date | string = new Date()): string {
  let f = offsetFormats.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", { timeZone: zone, timeZoneName: "longOffset" });
    offsetFormats.set(zone, f);
  }
  const name = f.formatToParts(typeof at === "string" ? new Date(at) : at).find((p) => p.type === "timeZoneName");
  const m = /^GMT([+-])(\d{2}):(\d{2})$/.exec(name?.value ?? "");
  if (!m || (m[2] === "00" && m[3] === "00")) return "UTC";
  return `UTC${m[1]}${Number(m[2])}${m[3] === "00" ? "" : `:${m[3]}`}`;
}

/**
 * The one formatter for a moment in time, in the zone it is given (the reader's, from
 * `useDisplayZone` in lib/client/time-zone.ts, or a schedule's own), the zone named by
 * `zoneLabel`. "—" for none. The same words whatever the browser's language, 24-hour clock.
 */
export function formatTime(
  iso: string | Date | null | undefined,
  zone: string,
  style: TimeStyle = "full",
  opts: { seconds?: boolean; now?: Date } = {},
): string {
  if (!iso) return "—";
  const at = typeof iso === "string" ? new Date(iso) : iso;
  if (Number.isNaN(at.getTime())) return "—";
  const p = zonedParts(at, zone);
  const pad = (n: number) => String(n).padStart(2, "0");
  const seconds = opts.seconds ?? style !== "minute";
  const clock = `${pad(p.h)}:${pad(p.mi)}${seconds ? `:${pad(p.s)}` : ""}`;
  const date = `${p.d} ${MONTHS[p.mo - 1]}`;
  switch (style) {
    case "clock":
      return clock;
    case "day":
      return `${date} ${p.y}`;
    case "minute": {
      const thisYear = zonedParts(opts.now ?? new Date(), zone).y;
      const weekday = WEEKDAYS[new Date(Date.UTC(p.y, p.mo - 1, p.d)).getUTCDay()];
      return `${weekday} ${date}${p.y === thisYear ? "" : ` ${p.y}`}, ${clock} ${zoneLabel(zone, at)}`;
    }
    default:
      return `${date} ${p.y}, ${clock} ${zoneLabel(zone, at)}`;
  }
}

/**
 * A window's edge (an export's `from`/`to`) in the reader's zone: the day alone when it is that
 * zone's midnight ("1 Jun 2026"), else the moment without its zone ("1 Jun 2026, 07:00"); the
 * caller names the zone once for both edges.
 */
export function formatWindowEdge(iso: string, zone: string): string {
  const p = zonedParts(new Date(iso), zone);
  const day = formatTime(iso, zone, "day");
  if (p.h === 0 && p.mi === 0 && p.s === 0) return day;
  return `${day}, ${formatTime(iso, zone, "clock", { seconds: p.s !== 0 })}`;
}

const relative = new Intl.RelativeTimeFormat("en", { numeric: "auto" });

/** "5 minutes ago", "in 2 hours", "just now": how far `iso` is from `now`. */
export function formatRelative(iso: string, now = Date.now()): string {
  const diff = new Date(iso).getTime() - now;
  const abs = Math.abs(diff);
  if (abs < 10_000) return "just now";
  const steps: [Intl.RelativeTimeFormatUnit, number][] = [
    ["second", 60_000],
    ["minute", 3_600_000],
    ["hour", 86_400_000],
    ["day", 30 * 86_400_000],
    ["month", 365 * 86_400_000],
  ];
  const unitMs: Record<string, number> = {
    second: 1000,
    minute: 60_000,
    hour: 3_600_000,
    day: 86_400_000,
    month: 30 * 86_400_000,
    year: 365 * 86_400_000,
  };
  const unit = steps.find(([, limit]) => abs < limit)?.[0] ?? "year";
  return relative.format(Math.trunc(diff / unitMs[unit]!), unit);
}

/** Local midnight at the start of a `YYYY-MM-DD` date (plus `days`), or null for a day that does not exist. */
export function localMidnight(date: string, days = 0): Date | null {
  const [y, m, d] = date.split("-").map(Number) as [number, number, number];
  const at = new Date(y, m - 1, d);
  if (at.getFullYear() !== y || at.getMonth() !== m - 1 || at.getDate() !== d) return null;
  at.setDate(at.getDate() + days);
  return at;
}

/** The local `YYYY-MM-DD` of an instant, and whether it is exactly that day's local midnight. */
export function localDay(iso: string): { day: string; midnight: boolean } {
  const at = new Date(iso);
  const pad = (n: number) => String(n).padStart(2, "0");
  return {
    day: `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())}`,
    midnight: at.getHours() === 0 && at.getMinutes() === 0 && at.getSeconds() === 0 && at.getMilliseconds() === 0,
  };
}

/** The browser's own time zone ("Europe/Berlin"; "UTC" when it has none). */
export function browserZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
}

/** Percent done (0–100), or null when the total is unknown. */
export function percentDone(job: {
  status: JobDto["status"];
  progress: Pick<JobDto["progress"], "done" | "total">;
}): number | null {
  if (job.status === "succeeded") return 100;
  const { done, total } = job.progress;
  if (!total) return null;
  return Math.min(100, Math.floor((done / total) * 100));
}

/**
 * Units per second over the last 30 s of the run (the database's samples, `recentRate` in
 * lib/jobs/progress-rate.ts: the API's `progress.rate` is the same function at the answer's
 * time), and the time left at that rate. A job that does not run has neither: a finished one
 * shows how long it took instead, a retrying one when it runs again.
 */
export function rateAndEta(
  job: { status: string; progress: Pick<JobDto["progress"], "done" | "total" | "samples"> },
  now = Date.now(),
): { rate: number | null; etaMs: number | null } {
  if (job.status !== "running") return { rate: null, etaMs: null };
  const rate = recentRate(job.progress.samples, now);
  return { rate, etaMs: timeLeftMs(job.progress.done, job.progress.total, rate) };
}

/**
 * What a job's progress says, in words: its own (`progressMessage`), or for a
 * job with children (an export's parts) "3 of 5 parts done · 20 MB" (and
 * "; assembling" once they all ended).
 */
export function progressText(
  job: Pick<JobDto, "type" | "input" | "status" | "progress">,
  noun = "parts",
): string | null {
  const { children, bytes, stage } = job.progress;
  const message = progressMessage(job);
  // A job that failed, was cancelled or expired says so with its status: what it was doing is history.
  if (job.status === "failed" || job.status === "cancelled" || job.status === "expired") return null;
  if (!children || (stage !== "waiting" && job.status !== "retrying")) return message;
  // A job that ended says so with its status; what its parts were doing is on the parts grid.
  if (job.status !== "running" && job.status !== "retrying") return null;
  const done = `${children.done} of ${children.total} ${noun} done`;
  const failed = children.failed ? ` · ${children.failed} failed` : "";
  const size = bytes ? ` · ${formatBytes(bytes)}` : "";
  const open = children.total - children.done - children.failed;
  return `${done}${failed}${size}${open === 0 ? "; assembling" : ""}`;
}

/**
 * A parent's children in a retry, each where it is: "part 3 of 8 retrying, attempt 2 of 3,
 * next in 4s" while its backoff runs, "…, starting" once it is due, "…, running" while the
 * attempt after a failed one runs; "and 2 more parts retrying" past the five the roll-up lists.
 * `noun` is the children's plural ("parts", "stages", "chunks"). Empty once the parent ended.
 */
export function retryLines(job: Pick<JobDto, "status" | "progress">, noun = "parts", now = Date.now()): string[] {
  const children = job.progress.children;
  if (!children || (job.status !== "running" && job.status !== "retrying")) return [];
  const one = noun.endsWith("s") ? noun.slice(0, -1) : noun;
  const lines = children.retries.map((r) => {
    const where = `${one} ${r.index + 1} of ${children.total} retrying, attempt ${r.attempt} of ${r.maxAttempts}`;
    if (r.status === "running") return `${where}, running`;
    const wait = new Date(r.runAt).getTime() - now;
    return wait >= 500 ? `${where}, next in ${formatDuration(wait)}` : `${where}, starting`;
  });
  const more = children.retrying - children.retries.length;
  if (more > 0) lines.push(`and ${more} more ${more === 1 ? one : noun} retrying`);
  return lines;
}

/** A cancel that was asked for and is under way, in words; null when there is none or the job ended. */
export function cancelText(job: Pick<JobDto, "status" | "cancelRequested">): string | null {
  const c = job.cancelRequested;
  if (!c || job.status !== "running") return null;
  return `Cancel requested${c.by ? ` by ${c.by}` : ""}${c.reason ? ` (${c.reason})` : ""}; stopping…`;
}

/** A job waiting to start that admission holds back (paused, or its tenant at its cap), or whose parts a pause holds. */
export function isHeld(job: Pick<JobDto, "admission" | "pause">): boolean {
  return job.admission === "waiting" || job.admission === "paused" || job.pause !== null;
}

/** What a pause holding a job says: "Paused by ada@acme.test: db maintenance". */
export function pauseText(p: NonNullable<JobDto["pause"]>, noun = "parts"): string {
  const scope = [p.queue ? `queue ${p.queue}` : null, p.type ? `type ${p.type}` : null].filter(Boolean).join(", ");
  const who = p.by ? ` by ${p.by}` : " by an operator";
  const what = p.via === "parts" ? `Its ${noun} are paused` : "Paused";
  return `${what}${who}${scope ? ` (${scope})` : ""}${p.reason ? `: ${p.reason}` : ""}`;
}

/** What a job that has not started is waiting for, in words. */
export function waitingText(job: Pick<JobDto, "status" | "admission" | "runAt">, now = Date.now()): string {
  if (job.status === "retrying" && new Date(job.runAt).getTime() > now) {
    return `retrying in ${formatDuration(new Date(job.runAt).getTime() - now)}`;
  }
  switch (job.admission) {
    case "paused":
      return "paused by an operator: starts when resumed";
    case "waiting":
      return "waiting for a free slot";
    case "admitted":
      return "starting…";
    default:
      return job.status;
  }
}
