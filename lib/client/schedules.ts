/**
 * Browser-side fetchers, query keys and wire → UI helpers for schedules: the
 * presets the form offers, cron in words, times in a schedule's zone and the
 * viewer's, the live preview (croner, the library the scheduler uses), and a
 * schedule's history as runs and events merged.
 */
import { Cron } from "croner";
import type { JobDto } from "../jobs/dto";
import type { MissedRunPolicy, OverlapPolicy } from "../schedules/schema";
import type { ScheduleDto, ScheduleEventDto } from "../schedules/service";
import { request } from "./api";
import { formatTime } from "./format";

export type { MissedRunPolicy, OverlapPolicy, ScheduleDto, ScheduleEventDto };

export const scheduleKeys = {
  all: ["schedules"] as const,
  lists: () => [...scheduleKeys.all, "list"] as const,
  list: (tenant: string | null) => [...scheduleKeys.lists(), tenant] as const,
  detail: (id: string) => [...scheduleKeys.all, "detail", id] as const,
  runs: (id: string) => [...scheduleKeys.all, "runs", id] as const,
  events: (id: string) => [...scheduleKeys.all, "events", id] as const,
};

/** What a scheduled export runs: an export request; `since: "lastRun"` exports only the rows since the previous run. */
export type ScheduledExportInput = {
  dataset: string;
  format: string;
  compression: string;
  csvSafe?: boolean;
  filter?: { since: "lastRun" } | { from?: string; to?: string };
};

export type ScheduleBody = {
  name: string;
  cron: string;
  timezone: string;
  task: "export";
  input: ScheduledExportInput;
  missedRunPolicy: MissedRunPolicy;
  overlapPolicy: OverlapPolicy;
  catchupWindowSeconds?: number;
  maxCatchup?: number;
};

export type RunsResult = { runs: string[]; skipped: number; cancelled: number; quotaSkipped: number };

const path = (id: string, rest = "") => `/api/v1/schedules/${encodeURIComponent(id)}${rest}`;

/** The principal's tenant's schedules; a platform admin's: every tenant's, or `tenant`'s (a slug). */
export function fetchSchedules(tenant: string | null = null): Promise<{ schedules: ScheduleDto[] }> {
  return request(`/api/v1/schedules${tenant ? `?tenant=${encodeURIComponent(tenant)}` : ""}`);
}

export function fetchSchedule(id: string): Promise<ScheduleDto> {
  return request(path(id));
}

export function createSchedule(body: ScheduleBody): Promise<ScheduleDto> {
  return request("/api/v1/schedules", { method: "POST", body: JSON.stringify(body) });
}

export function updateSchedule(id: string, body: Partial<Omit<ScheduleBody, "task">>): Promise<ScheduleDto> {
  return request(path(id), { method: "PATCH", body: JSON.stringify(body) });
}

export function deleteSchedule(id: string): Promise<{ deleted: true; cancelledRuns: number }> {
  return request(path(id), { method: "DELETE" });
}

export function pauseSchedule(id: string): Promise<ScheduleDto> {
  return request(path(id, "/pause"), { method: "POST" });
}

export function resumeSchedule(id: string): Promise<ScheduleDto> {
  return request(path(id, "/resume"), { method: "POST" });
}

/** One run now (beside an open run unless `overlapPolicy` says otherwise). */
export function triggerSchedule(id: string, overlapPolicy?: OverlapPolicy): Promise<RunsResult> {
  return request(path(id, "/trigger"), {
    method: "POST",
    body: JSON.stringify(overlapPolicy ? { overlapPolicy } : {}),
  });
}

/** A run for every occurrence in [from, to] that has none yet. */
export function backfillSchedule(
  id: string,
  body: { from: string; to: string; overlapPolicy?: OverlapPolicy },
): Promise<RunsResult & { occurrences: number }> {
  return request(path(id, "/backfill"), { method: "POST", body: JSON.stringify(body) });
}

/** The schedule's runs, newest occurrence first, keyset-paged. */
export function fetchScheduleRuns(
  id: string,
  cursor?: string,
  limit = 20,
): Promise<{ runs: JobDto[]; nextCursor: string | null }> {
  const q = new URLSearchParams({ limit: String(limit) });
  if (cursor) q.set("cursor", cursor);
  return request(path(id, `/runs?${q}`));
}

/** Occurrences that made no run (missed, skipped, buffered) and runs cancelled by a newer one, newest first. */
export function fetchScheduleEvents(id: string): Promise<{ events: ScheduleEventDto[] }> {
  return request(path(id, "/events"));
}

// Policies, in the reader's words.

export const missedRunPolicyLabels: Record<MissedRunPolicy, { label: string; help: string }> = {
  once: { label: "Once", help: "After downtime, one run for the latest missed time." },
  skip: { label: "Skip", help: "After downtime, no catch-up: missed times are counted and shown." },
  all: { label: "All", help: "After downtime, a run for every missed time in the catch-up window, oldest first." },
};

export const overlapPolicyLabels: Record<OverlapPolicy, { label: string; help: string }> = {
  skip: { label: "Skip", help: "While the previous run is still waiting or running, the next one is skipped." },
  buffer_one: { label: "Buffer one", help: "At most one run waits for the open one to end, then starts." },
  allow: { label: "Allow", help: "Runs start on time, beside any open run." },
  cancel_other: { label: "Cancel the other", help: "A new run cancels the open one." },
};

// Presets: what the form offers besides a raw cron expression.

export type Preset = "hourly" | "daily" | "weekly" | "custom";
export type PresetValues = { minute: number; time: string; day: number; custom: string };

export const WEEKDAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"] as const;

const pad = (n: number) => String(n).padStart(2, "0");

/** The cron expression a preset stands for. */
export function presetCron(preset: Preset, v: PresetValues): string {
  const [h = 0, m = 0] = v.time.split(":").map(Number);
  switch (preset) {
    case "hourly":
      return `${v.minute} * * * *`;
    case "daily":
      return `${m} ${h} * * *`;
    case "weekly":
      return `${m} ${h} * * ${v.day}`;
    case "custom":
      return v.custom.trim();
  }
}

const NUM = /^\d{1,2}$/;

/** The preset a cron expression is (for the edit form), or `custom`. */
export function presetOf(cron: string): { preset: Preset; values: PresetValues } {
  const values: PresetValues = { minute: 0, time: "09:00", day: 1, custom: cron };
  const f = cron.trim().split(/\s+/);
  if (f.length !== 5 || !f.slice(0, 2).every((x) => NUM.test(x) || x === "*")) return { preset: "custom", values };
  const [min, hour, dom, mon, dow] = f as [string, string, string, string, string];
  if (!NUM.test(min) || Number(min) > 59 || dom !== "*" || mon !== "*") return { preset: "custom", values };
  if (hour === "*" && dow === "*") return { preset: "hourly", values: { ...values, minute: Number(min) } };
  if (!NUM.test(hour) || Number(hour) > 23) return { preset: "custom", values };
  const time = `${pad(Number(hour))}:${pad(Number(min))}`;
  if (dow === "*") return { preset: "daily", values: { ...values, time } };
  if (/^[0-6]$/.test(dow)) return { preset: "weekly", values: { ...values, time, day: Number(dow) } };
  return { preset: "custom", values };
}

/** A cron expression in words when it is a common shape ("Daily at 02:30"), else null. */
export function describeCron(cron: string): string | null {
  let f = cron.trim().split(/\s+/);
  if (f.length === 6) {
    const [sec, ...rest] = f as [string, ...string[]];
    if (rest.every((x) => x === "*")) {
      if (sec === "*") return "Every second";
      const every = /^\*\/(\d+)$/.exec(sec);
      if (every) return `Every ${every[1]} seconds`;
    }
    if (sec !== "0") return null;
    f = rest;
  }
  if (f.length !== 5) return null;
  const [min, hour, dom, mon, dow] = f as [string, string, string, string, string];
  if (mon !== "*") return null;
  if (f.every((x) => x === "*")) return "Every minute";
  const everyMin = /^\*\/(\d+)$/.exec(min);
  if (everyMin && hour === "*" && dom === "*" && dow === "*") return `Every ${everyMin[1]} minutes`;
  if (!NUM.test(min)) return null;
  if (hour === "*" && dom === "*" && dow === "*") return `Hourly at minute ${Number(min)}`;
  if (!NUM.test(hour)) return null;
  const at = `${pad(Number(hour))}:${pad(Number(min))}`;
  if (dom === "*" && dow === "*") return `Daily at ${at}`;
  if (dom === "*" && /^[0-7]$/.test(dow)) return `Weekly on ${WEEKDAYS[Number(dow) % 7]} at ${at}`;
  if (dom === "*" && dow === "1-5") return `Weekdays at ${at}`;
  if (NUM.test(dom) && dow === "*") return `Monthly on day ${Number(dom)} at ${at}`;
  return null;
}

/** Whether a cron expression has a seconds field (then times are shown to the second). */
export function hasSeconds(cron: string): boolean {
  return cron.trim().split(/\s+/).length === 6;
}

/**
 * The next `n` runs of `cron` in `zone` after `now`, computed in the browser
 * with croner, or why there are none (the API says the same on submit).
 */
export function previewRuns(
  cron: string,
  zone: string,
  now: Date,
  n = 5,
): { runs: Date[]; error: null } | { runs: []; error: string } {
  const fields = cron.trim() ? cron.trim().split(/\s+/).length : 0;
  if (fields !== 5 && fields !== 6) {
    return {
      runs: [],
      error: `must have 5 fields (minute hour day-of-month month day-of-week) or 6 (seconds first); got ${fields}`,
    };
  }
  try {
    return { runs: new Cron(cron, { timezone: zone, paused: true }).nextRuns(n, now), error: null };
  } catch (err) {
    return { runs: [], error: (err as Error).message.replace(/^CronPattern: /, "") };
  }
}

/** Every IANA zone the browser knows, UTC first. */
export function timeZones(): string[] {
  const zones = typeof Intl.supportedValuesOf === "function" ? Intl.supportedValuesOf("timeZone") : [];
  return ["UTC", ...zones.filter((z) => z !== "UTC")];
}

export { browserZone } from "./format";

/**
 * An instant as the clock in `zone` shows it: "Mon 1 Dec, 02:30 UTC+1" (the year when not this
 * one); the one formatter (formatTime, lib/client/format.ts) in its `minute` style.
 */
export function formatInZone(iso: string | Date, zone: string, withSeconds = false, now = new Date()): string {
  return formatTime(iso, zone, "minute", { seconds: withSeconds, now });
}

/** Whether two zones show the same clock time at `at` (then one time is enough). */
export function sameClock(a: string, b: string, at: Date): boolean {
  if (a === b) return true;
  const f = (zone: string) =>
    new Intl.DateTimeFormat("en-US", { timeZone: zone, dateStyle: "short", timeStyle: "short" }).format(at);
  return f(a) === f(b);
}

/** A datetime-local input's value (the viewer's clock) as an ISO instant; "" stays "". */
export function localInputToIso(value: string): string {
  return value ? new Date(value).toISOString() : "";
}

// History: runs and events, one list.

export type HistoryEntry =
  | { kind: "run"; key: string; scheduledFor: string; run: JobDto }
  | { kind: "event"; key: string; scheduledFor: string; event: ScheduleEventDto };

export const eventLabels: Record<ScheduleEventDto["kind"], string> = {
  missed: "Missed: no scheduler was running",
  overlap_skipped: "Skipped: the previous run was still open",
  buffered: "Buffered: waits for the open run to end",
  cancelled_other: "A newer run cancelled an open one",
  quota_skipped: "Not run: a quota was used up",
};

/** A quota_skipped event's quota, in words: what was used up. */
export const eventQuotaLabels: Record<NonNullable<ScheduleEventDto["quota"]>, string> = {
  jobs_per_user: "the owner's unfinished jobs (jobs_per_user)",
  jobs_per_tenant: "the tenant's unfinished jobs (jobs_per_tenant)",
  export_bytes: "the tenant's stored bytes (export_bytes)",
};

/**
 * Runs and events in one list, newest occurrence first. Events older than the
 * oldest loaded run wait until that page of runs is loaded (`complete`: every
 * run is loaded), so the list never skips a stretch.
 */
export function mergeHistory(runs: JobDto[], events: ScheduleEventDto[], complete: boolean): HistoryEntry[] {
  const oldest = runs.reduce<string | null>(
    (min, r) => (r.scheduledFor && (!min || r.scheduledFor < min) ? r.scheduledFor : min),
    null,
  );
  const entries: HistoryEntry[] = [
    ...runs.map((run) => ({
      kind: "run" as const,
      key: `run-${run.id}`,
      scheduledFor: run.scheduledFor ?? run.createdAt,
      run,
    })),
    ...events
      .filter((e) => complete || !oldest || e.scheduledFor >= oldest)
      .map((event) => ({ kind: "event" as const, key: `event-${event.id}`, scheduledFor: event.scheduledFor, event })),
  ];
  return entries.sort(
    (a, b) =>
      new Date(b.scheduledFor).getTime() - new Date(a.scheduledFor).getTime() ||
      (a.kind === b.kind ? 0 : a.kind === "event" ? -1 : 1),
  );
}
