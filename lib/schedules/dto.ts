/** A schedule as the API, the pages and the CLI see it (ScheduleDto), with its latest run. */
import { tenantScope } from "../auth/authorize";
import type { Principal } from "../auth/principal";
import { db, pool } from "../db";
import { notFound } from "../errors";
import type { ScheduleModel } from "../generated/prisma/models";
import { parseIdOr404 } from "../ids";
import { priorityName, type PriorityName } from "../jobs/priority";
import { taskDefinitions } from "../jobs/registry";
import type { RunRefusal } from "../jobs/sql/gate-scheduled-runs";
import { isoInZone, nextOccurrences } from "./cron";
import { type EventKind } from "./materialize";
import { type MissedRunPolicy, type OverlapPolicy } from "./schema";

export type ScheduleDto = {
  id: string;
  tenantId: string;
  tenant: string | null;
  name: string;
  cron: string;
  timezone: string;
  task: string;
  input: unknown;
  missedRunPolicy: MissedRunPolicy;
  overlapPolicy: OverlapPolicy;
  catchupWindowSeconds: number;
  maxCatchup: number;
  startAt: string | null;
  endAt: string | null;
  paused: boolean;
  pausedAt: string | null;
  /** The next occurrence, then the next five (ISO 8601 with the zone's offset). */
  nextRunAt: string | null;
  nextRuns: string[];
  /** The latest run: its job, status and occurrence. */
  lastRun: { id: string; status: string; scheduledFor: string } | null;
  bufferedFor: string | null;
  missedCount: number;
  overlapSkippedCount: number;
  /** Runs the quotas refused (each a `quota_skipped` event). */
  quotaSkippedCount: number;
  /** Its runs' priority. */
  priority: PriorityName;
  createdBy: string | null;
  createdAt: string;
  updatedAt: string;
};

export type ScheduleEventDto = {
  id: string;
  kind: EventKind;
  scheduledFor: string;
  jobId: string | null;
  /** A quota_skipped event's quota (jobs_per_user, jobs_per_tenant, export_bytes); else null. */
  quota: RunRefusal["quota"] | null;
  at: string;
};

type Row = ScheduleModel & { tenant?: { slug: string }; createdBy?: { email: string } | null };

/** The task types a schedule made through the API or the CLI may run (no internal one: the probe). */
export function schedulableTasks(): string[] {
  return taskDefinitions()
    .filter((d) => d.schedulable && !d.internal)
    .map((d) => d.type);
}

export function toDto(s: Row, lastRun: ScheduleDto["lastRun"], now = new Date()): ScheduleDto {
  const timing = { cron: s.cron, timezone: s.timezone, startAt: s.startAt, endAt: s.endAt };
  const upcoming = s.nextRunAt ? [s.nextRunAt, ...nextOccurrences(timing, s.nextRunAt, 4)] : [];
  // A paused schedule shows what it would run from now on if resumed.
  const shown = s.paused ? nextOccurrences(timing, now, 5) : upcoming;
  return {
    id: s.id,
    tenantId: s.tenantId,
    tenant: s.tenant?.slug ?? null,
    name: s.name,
    cron: s.cron,
    timezone: s.timezone,
    task: s.task,
    input: s.input,
    missedRunPolicy: s.missedRunPolicy as MissedRunPolicy,
    overlapPolicy: s.overlapPolicy as OverlapPolicy,
    catchupWindowSeconds: s.catchupWindowSeconds,
    maxCatchup: s.maxCatchup,
    startAt: s.startAt?.toISOString() ?? null,
    endAt: s.endAt?.toISOString() ?? null,
    paused: s.paused,
    pausedAt: s.pausedAt?.toISOString() ?? null,
    nextRunAt: s.paused ? null : s.nextRunAt ? isoInZone(s.nextRunAt, s.timezone) : null,
    nextRuns: shown.map((d) => isoInZone(d, s.timezone)),
    lastRun,
    bufferedFor: s.bufferedFor?.toISOString() ?? null,
    missedCount: s.missedCount,
    overlapSkippedCount: s.overlapSkippedCount,
    quotaSkippedCount: s.quotaSkippedCount,
    priority: priorityName(s.priority),
    createdBy: s.createdBy?.email ?? null,
    createdAt: s.createdAt.toISOString(),
    updatedAt: s.updatedAt.toISOString(),
  };
}

export const scheduleInclude = { tenant: { select: { slug: true } }, createdBy: { select: { email: true } } } as const;

export async function lastRuns(ids: string[]): Promise<Map<string, ScheduleDto["lastRun"]>> {
  if (!ids.length) return new Map();
  const { rows } = await pool().query<{ scheduleId: string; id: string; status: string; scheduledFor: Date }>(
    `SELECT s.id AS "scheduleId", r.job_id AS id, j.status::text AS status, r.scheduled_for AS "scheduledFor"
       FROM unnest($1::uuid[]) AS s(id)
       JOIN LATERAL (SELECT job_id, scheduled_for FROM schedule_runs WHERE schedule_id = s.id
                      ORDER BY scheduled_for DESC LIMIT 1) r ON true
       JOIN jobs j ON j.id = r.job_id`,
    [ids],
  );
  return new Map(
    rows.map((r) => [r.scheduleId, { id: r.id, status: r.status, scheduledFor: r.scheduledFor.toISOString() }]),
  );
}

export async function view(s: Row): Promise<ScheduleDto> {
  return toDto(s, (await lastRuns([s.id])).get(s.id) ?? null);
}

/** The schedule the principal may see; 404 otherwise. */
export async function scheduleFor(principal: Principal, rawId: string): Promise<ScheduleModel> {
  const id = parseIdOr404(rawId, "Schedule not found");
  const s = await db().schedule.findFirst({ where: { id, ...tenantScope(principal) } });
  if (!s) throw notFound("Schedule not found");
  return s;
}
