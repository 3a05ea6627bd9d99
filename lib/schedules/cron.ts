/**
 * Cron expressions and time zones, through croner: 5 fields (minute to day of
 * week) or 6 (seconds first), evaluated in an IANA zone. A wall time that a
 * DST change skips runs at the first valid time after it; one that repeats
 * runs once (croner's rules, tested in tests/unit/schedules.test.ts).
 */
import { Cron } from "croner";

const zones = new Set(Intl.supportedValuesOf("timeZone"));

/** "" when `zone` is an IANA zone this runtime knows, else why not. */
export function zoneProblem(zone: string): string {
  if (zone === "UTC" || zones.has(zone)) return "";
  try {
    new Intl.DateTimeFormat("en", { timeZone: zone });
    return "";
  } catch {
    return `unknown IANA time zone "${zone}" (e.g. Europe/Berlin, America/New_York, UTC)`;
  }
}

/** "" when `expr` is a cron expression we run, else why not. */
export function cronProblem(expr: string): string {
  const fields = expr.trim().split(/\s+/);
  if (fields.length !== 5 && fields.length !== 6) {
    return `must have 5 fields (minute hour day-of-month month day-of-week) or 6 (seconds first); got ${fields.length}`;
  }
  try {
    new Cron(expr, { paused: true });
    return "";
  } catch (err) {
    return (err as Error).message.replace(/^CronPattern: /, "");
  }
}

/** Occurrences looked at for the shortest interval: a schedule's pattern repeats within its first day of runs. */
const INTERVAL_SAMPLE = 1_000;

/**
 * "" when `expr`'s runs (in `zone`) are never closer than `minSeconds`, else
 * why not. Looks at the next 1,000 occurrences: a cron's fields repeat the
 * same gaps in every minute, hour and day it fires, so a burst shows at once.
 */
export function intervalProblem(expr: string, zone: string, minSeconds: number): string {
  if (minSeconds <= 1) return ""; // a cron fires at most once a second
  const times = occurrencesBetween({ cron: expr, timezone: zone }, new Date(), new Date(8.64e15), INTERVAL_SAMPLE);
  for (let i = 1; i < times.length; i++) {
    const gap = (times[i]!.getTime() - times[i - 1]!.getTime()) / 1000;
    if (gap < minSeconds) {
      return `runs ${gap} s apart (at ${times[i - 1]!.toISOString()} and ${times[i]!.toISOString()}); schedules run at most once every ${minSeconds} s`;
    }
  }
  return "";
}

export type Timing = { cron: string; timezone: string; startAt?: Date | null; endAt?: Date | null };

function cronOf(t: Timing): Cron {
  return new Cron(t.cron, { timezone: t.timezone, paused: true });
}

/**
 * Occurrences strictly after `after` and at or before `until`, oldest first,
 * at most `limit`; within [startAt, endAt].
 */
export function occurrencesBetween(t: Timing, after: Date, until: Date, limit: number): Date[] {
  const cron = cronOf(t);
  const out: Date[] = [];
  let cursor = after;
  if (t.startAt && cursor < t.startAt) cursor = new Date(t.startAt.getTime() - 1);
  while (out.length < limit) {
    const next = cron.nextRun(cursor);
    if (!next || next > until || (t.endAt && next >= t.endAt)) break;
    out.push(next);
    cursor = next;
  }
  return out;
}

/** The first occurrence strictly after `after` (null: none before endAt). */
export function nextOccurrence(t: Timing, after: Date): Date | null {
  const cron = cronOf(t);
  const from = t.startAt && after < t.startAt ? new Date(t.startAt.getTime() - 1) : after;
  const next = cron.nextRun(from);
  if (!next || (t.endAt && next >= t.endAt)) return null;
  return next;
}

/** The next `n` occurrences after `after`. */
export function nextOccurrences(t: Timing, after: Date, n: number): Date[] {
  return occurrencesBetween(t, after, new Date(8.64e15), n);
}

/** An instant as ISO 8601 with the zone's offset at that instant (2026-03-29T03:00:00+02:00). */
export function isoInZone(d: Date, zone: string): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat("en-CA", {
      timeZone: zone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
    })
      .formatToParts(d)
      .map((p) => [p.type, p.value]),
  );
  const local = Date.UTC(+parts.year!, +parts.month! - 1, +parts.day!, +parts.hour!, +parts.minute!, +parts.second!);
  const offsetMin = Math.round((local - Math.floor(d.getTime() / 1000) * 1000) / 60_000);
  const sign = offsetMin < 0 ? "-" : "+";
  const abs = Math.abs(offsetMin);
  const off = `${sign}${String(Math.floor(abs / 60)).padStart(2, "0")}:${String(abs % 60).padStart(2, "0")}`;
  const ms = d.getUTCMilliseconds();
  return `${parts.year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}:${parts.second}${ms ? `.${String(ms).padStart(3, "0")}` : ""}${off}`;
}
