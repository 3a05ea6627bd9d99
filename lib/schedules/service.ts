/**
 * Schedules as the API, the pages and the CLI use them. Members manage their
 * own tenant's schedules; a platform admin sees every tenant's; another
 * tenant's schedule is not found. Every change is audited, and wakes the
 * schedulers (NOTIFY) so a new next run is honoured at once.
 */
import { z } from "zod";
import { recordAudit } from "../audit";
import { requireTenant, tenantScope } from "../auth/authorize";
import type { Principal } from "../auth/principal";
import { db, inTransaction, pool, Prisma } from "../db";
import { AppError, notFound, parseOrThrow } from "../errors";
import type { ScheduleModel } from "../generated/prisma/models";
import { parseIdOr404 } from "../ids";
import { decodeCursor, encodeCursor } from "../jobs/queries";
import { getTaskDefinition, taskDefinitions } from "../jobs/registry";
import { insertScheduledRuns } from "../jobs/enqueue";
import { requestCancel } from "../jobs/sql/cancel";
import type { JobDto } from "../jobs/dto";
import { pauseScopesFor } from "../jobs/pause-scopes";
import { jobView } from "../jobs/view";
import { scheduleSettings } from "./settings";
import type { RunRefusal } from "../jobs/sql/gate-scheduled-runs";
import { refusalError } from "../tenants/quotas";
import { isoInZone, nextOccurrence, nextOccurrences, occurrencesBetween } from "./cron";
import { quotaEvents, recordEvents, runRow, SCHEDULER_CHANNEL, type Event, type EventKind } from "./materialize";
import { countTenantSchedules } from "./sql/count-tenant-schedules";
import { lockTenantSchedules } from "./sql/lock-tenant-schedules";
import {
  backfillSchema,
  createScheduleSchema,
  MAX_BACKFILL,
  triggerSchema,
  updateScheduleSchema,
  type MissedRunPolicy,
  type OverlapPolicy,
} from "./schema";

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

function toDto(s: Row, lastRun: ScheduleDto["lastRun"], now = new Date()): ScheduleDto {
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
    createdBy: s.createdBy?.email ?? null,
    createdAt: s.createdAt.toISOString(),
    updatedAt: s.updatedAt.toISOString(),
  };
}

const include = { tenant: { select: { slug: true } }, createdBy: { select: { email: true } } } as const;

async function lastRuns(ids: string[]): Promise<Map<string, ScheduleDto["lastRun"]>> {
  if (!ids.length) return new Map();
  const { rows } = await pool().query<{ scheduleId: string; id: string; status: string; scheduledFor: Date }>(
    `SELECT s.id AS "scheduleId", j.id, j.status::text AS status, j.scheduled_for AS "scheduledFor"
       FROM unnest($1::uuid[]) AS s(id)
       JOIN LATERAL (SELECT id, status, scheduled_for FROM jobs WHERE schedule_id = s.id
                      ORDER BY scheduled_for DESC LIMIT 1) j ON true`,
    [ids],
  );
  return new Map(
    rows.map((r) => [r.scheduleId, { id: r.id, status: r.status, scheduledFor: r.scheduledFor.toISOString() }]),
  );
}

async function view(s: Row): Promise<ScheduleDto> {
  return toDto(s, (await lastRuns([s.id])).get(s.id) ?? null);
}

/**
 * Validates a schedule's task and input: the task must be schedulable (and not internal, unless
 * `internal`: code of ours in this process), the input its schedule input.
 */
function checkTask(task: string, input: unknown, internal = false): unknown {
  const def = getTaskDefinition(task);
  if (!def?.schedulable || (def.internal && !internal)) {
    throw new AppError("invalid_input", `Invalid input: task: must be one of ${schedulableTasks().join(", ")}`, [
      { path: "task", message: `must be one of ${schedulableTasks().join(", ")}` },
    ]);
  }
  return parseOrThrow(def.schedulable.inputSchema, input, "input");
}

function firstRun(t: { cron: string; timezone: string; startAt?: Date | null; endAt?: Date | null }): Date | null {
  return nextOccurrence(t, new Date());
}

const wake = (tx: Prisma.TransactionClient) => tx.$executeRaw`SELECT pg_notify(${SCHEDULER_CHANNEL}, '')`;

async function lockSchedule(tx: Prisma.TransactionClient, principal: Principal, rawId: string): Promise<ScheduleModel> {
  const id = parseIdOr404(rawId, "Schedule not found");
  const scope = tenantScope(principal);
  const rows = await tx.$queryRaw<{ id: string }[]>`
    SELECT id FROM schedules WHERE id = ${id}::uuid
      AND (${scope.tenantId ?? null}::uuid IS NULL OR tenant_id = ${scope.tenantId ?? null}::uuid)
    FOR UPDATE`;
  if (!rows[0]) throw notFound("Schedule not found");
  return tx.schedule.findUniqueOrThrow({ where: { id } });
}

function nameTaken(err: unknown): never {
  if (err instanceof Prisma.PrismaClientKnownRequestError && err.code === "P2002") {
    throw new AppError("conflict", "Invalid input: name: a schedule of this tenant already has this name", [
      { path: "name", message: "a schedule of this tenant already has this name" },
    ]);
  }
  throw err;
}

/**
 * Creates a schedule, within the tenant's cap (QUOTA_SCHEDULES_PER_TENANT: 429 `quota_exceeded`).
 * `internal`: the caller is code of ours in this process (tests, benchmarks), which may schedule an
 * internal task (the probe); the API and the CLI never pass it.
 */
export async function createSchedule(
  principal: Principal,
  body: unknown,
  opts: { internal?: boolean } = {},
): Promise<ScheduleDto> {
  const tenantId = requireTenant(principal);
  const b = parseOrThrow(createScheduleSchema, body);
  const input = checkTask(b.task, b.input, opts.internal);
  const timing = {
    cron: b.cron,
    timezone: b.timezone,
    startAt: b.startAt ? new Date(b.startAt) : null,
    endAt: b.endAt ? new Date(b.endAt) : null,
  };
  const created = await db()
    .$transaction(async (tx) => {
      await lockTenantSchedules(tx, tenantId);
      const limit = scheduleSettings().QUOTA_SCHEDULES_PER_TENANT;
      const used = await countTenantSchedules(tx, tenantId);
      if (used >= limit) {
        throw new AppError(
          "quota_exceeded",
          `Quota exceeded: schedules_per_tenant — at most ${limit} schedules per tenant, and this tenant has ${used}; delete one first`,
          undefined,
          { details: { quota: "schedules_per_tenant", limit, used } },
        );
      }
      const s = await tx.schedule.create({
        data: {
          tenantId,
          name: b.name,
          cron: b.cron,
          timezone: b.timezone,
          task: b.task,
          input: input as Prisma.InputJsonValue,
          missedRunPolicy: b.missedRunPolicy,
          overlapPolicy: b.overlapPolicy,
          catchupWindowSeconds: b.catchupWindowSeconds,
          maxCatchup: b.maxCatchup,
          startAt: timing.startAt,
          endAt: timing.endAt,
          paused: b.paused,
          pausedAt: b.paused ? new Date() : null,
          nextRunAt: firstRun(timing),
          createdById: principal.userId,
        },
        include,
      });
      await recordAudit(
        principal,
        {
          action: "schedule.create",
          targetType: "schedule",
          targetIds: [s.id],
          details: { name: s.name, cron: s.cron, timezone: s.timezone },
        },
        tx,
      );
      await wake(tx);
      return s;
    })
    .catch(nameTaken);
  return view(created);
}

export const listSchedulesQuerySchema = z.object({
  tenant: z.string().max(200).optional(),
  limit: z.coerce.number({ error: "must be a number" }).int().min(1).max(500).default(200),
});

/** The principal's tenant's schedules (a platform admin: every tenant's), by name. */
export async function listSchedules(
  principal: Principal,
  rawQuery: unknown = {},
): Promise<{ schedules: ScheduleDto[] }> {
  const q = parseOrThrow(listSchedulesQuerySchema, rawQuery);
  const rows = await db().schedule.findMany({
    where: {
      ...tenantScope(principal),
      ...(q.tenant && principal.isPlatformAdmin ? { tenant: { slug: q.tenant } } : {}),
    },
    orderBy: [{ name: "asc" }, { id: "asc" }],
    take: q.limit,
    include,
  });
  const last = await lastRuns(rows.map((r) => r.id));
  return { schedules: rows.map((r) => toDto(r, last.get(r.id) ?? null)) };
}

export async function getSchedule(principal: Principal, rawId: string): Promise<ScheduleDto> {
  const id = parseIdOr404(rawId, "Schedule not found");
  const s = await db().schedule.findFirst({ where: { id, ...tenantScope(principal) }, include });
  if (!s) throw notFound("Schedule not found");
  return view(s);
}

export async function updateSchedule(principal: Principal, rawId: string, body: unknown): Promise<ScheduleDto> {
  const b = parseOrThrow(updateScheduleSchema, body);
  const updated = await db()
    .$transaction(async (tx) => {
      const s = await lockSchedule(tx, principal, rawId);
      const input = b.input !== undefined ? checkTask(s.task, b.input) : undefined;
      const timing = {
        cron: b.cron ?? s.cron,
        timezone: b.timezone ?? s.timezone,
        startAt: b.startAt === undefined ? s.startAt : b.startAt ? new Date(b.startAt) : null,
        endAt: b.endAt === undefined ? s.endAt : b.endAt ? new Date(b.endAt) : null,
      };
      if (timing.startAt && timing.endAt && timing.endAt <= timing.startAt) {
        throw new AppError("invalid_input", "Invalid input: endAt: must be after startAt", [
          { path: "endAt", message: "must be after startAt" },
        ]);
      }
      const retimed =
        b.cron !== undefined || b.timezone !== undefined || b.startAt !== undefined || b.endAt !== undefined;
      const row = await tx.schedule.update({
        where: { id: s.id },
        data: {
          ...(b.name !== undefined ? { name: b.name } : {}),
          ...(input !== undefined ? { input: input as Prisma.InputJsonValue } : {}),
          ...(b.missedRunPolicy ? { missedRunPolicy: b.missedRunPolicy } : {}),
          ...(b.overlapPolicy ? { overlapPolicy: b.overlapPolicy } : {}),
          ...(b.catchupWindowSeconds !== undefined ? { catchupWindowSeconds: b.catchupWindowSeconds } : {}),
          ...(b.maxCatchup !== undefined ? { maxCatchup: b.maxCatchup } : {}),
          ...(retimed
            ? {
                cron: timing.cron,
                timezone: timing.timezone,
                startAt: timing.startAt,
                endAt: timing.endAt,
                nextRunAt: firstRun(timing),
              }
            : {}),
        },
        include,
      });
      await recordAudit(
        principal,
        {
          action: "schedule.update",
          targetType: "schedule",
          targetIds: [s.id],
          tenantId: s.tenantId,
          details: { changed: Object.keys(b) },
        },
        tx,
      );
      await wake(tx);
      return row;
    })
    .catch(nameTaken);
  return view(updated);
}

/** Deletes a schedule: its waiting runs are cancelled, its finished and running ones kept. */
export async function deleteSchedule(
  principal: Principal,
  rawId: string,
): Promise<{ deleted: true; cancelledRuns: number }> {
  const s = await scheduleFor(principal, rawId);
  const cancelled = await inTransaction(async (client) => {
    const { rows: held } = await client.query("SELECT 1 FROM schedules WHERE id = $1 FOR UPDATE", [s.id]);
    if (!held.length) throw notFound("Schedule not found");
    const { rows } = await client.query<{ id: string }>(
      `SELECT id FROM jobs WHERE schedule_id = $1 AND status IN ('scheduled', 'queued', 'retrying')`,
      [s.id],
    );
    const ids = await requestCancel(
      client,
      rows.map((r) => r.id),
      `Its schedule "${s.name}" was deleted`,
    );
    await client.query("DELETE FROM schedules WHERE id = $1", [s.id]);
    return ids;
  });
  await recordAudit(principal, {
    action: "schedule.delete",
    targetType: "schedule",
    targetIds: [s.id],
    tenantId: s.tenantId,
    details: { name: s.name, cancelledRuns: cancelled.length },
  });
  return { deleted: true, cancelledRuns: cancelled.length };
}

export async function pauseSchedule(principal: Principal, rawId: string, paused: boolean): Promise<ScheduleDto> {
  const row = await db().$transaction(async (tx) => {
    const s = await lockSchedule(tx, principal, rawId);
    const timing = { cron: s.cron, timezone: s.timezone, startAt: s.startAt, endAt: s.endAt };
    const updated = await tx.schedule.update({
      where: { id: s.id },
      // Resumed: from now on. What fell due while paused was not missed: it was not wanted.
      data: paused
        ? { paused: true, pausedAt: s.paused ? s.pausedAt : new Date() }
        : {
            paused: false,
            pausedAt: null,
            nextRunAt: s.paused ? firstRun(timing) : s.nextRunAt,
            ...(s.paused ? { bufferedFor: null } : {}),
          },
      include,
    });
    if (s.paused !== paused) {
      await recordAudit(
        principal,
        {
          action: paused ? "schedule.pause" : "schedule.resume",
          targetType: "schedule",
          targetIds: [s.id],
          tenantId: s.tenantId,
        },
        tx,
      );
    }
    await wake(tx);
    return updated;
  });
  return view(row);
}

export type RunsMade = {
  runs: string[];
  skipped: number;
  cancelled: number;
  /** Occurrences the quotas refused a run (each a quota_skipped event). */
  quotaSkipped: number;
};

/**
 * Makes runs for the given occurrences now (trigger, backfill), each under `overlap`, oldest first,
 * each through the quota gate against the schedule's owner and tenant. `refusal`: the last refusal.
 */
async function runOccurrences(
  s: ScheduleModel,
  occurrences: Date[],
  overlap: OverlapPolicy,
): Promise<RunsMade & { refusal: RunRefusal | null }> {
  return inTransaction(async (tx) => {
    await tx.query("SELECT 1 FROM schedules WHERE id = $1 FOR UPDATE", [s.id]);
    const { rows } = await tx.query<{ id: string }>(
      `SELECT id FROM jobs WHERE schedule_id = $1 AND status IN ('scheduled', 'queued', 'running', 'retrying')`,
      [s.id],
    );
    let open = rows.map((r) => r.id);
    const out = { runs: [] as string[], skipped: 0, cancelled: 0, quotaSkipped: 0, refusal: null as RunRefusal | null };
    const events: Event[] = [];
    for (const t of occurrences) {
      if (open.length && overlap === "skip") {
        events.push({ scheduleId: s.id, kind: "overlap_skipped", scheduledFor: t });
        out.skipped++;
        continue;
      }
      if (open.length && overlap === "buffer_one") {
        // Backfill and trigger buffer nothing: with an open run, buffer_one waits the way skip does.
        events.push({ scheduleId: s.id, kind: "overlap_skipped", scheduledFor: t });
        out.skipped++;
        continue;
      }
      if (open.length && overlap === "cancel_other") {
        const ids = await requestCancel(tx, open, `Replaced by the run for ${t.toISOString()}`);
        ids.forEach((jobId) => events.push({ scheduleId: s.id, kind: "cancelled_other", scheduledFor: t, jobId }));
        out.cancelled += ids.length;
        open = [];
      }
      const prev = await tx.query<{ last: Date | null }>(
        "SELECT max(scheduled_for) AS last FROM jobs WHERE schedule_id = $1 AND scheduled_for < $2",
        [s.id, t],
      );
      const run = runRow(
        {
          ...s,
          missedRunPolicy: s.missedRunPolicy as MissedRunPolicy,
          overlapPolicy: s.overlapPolicy as OverlapPolicy,
        },
        t,
        prev.rows[0]?.last ?? null,
      );
      if (!run) continue;
      const { made, refused } = await insertScheduledRuns(tx, [run]);
      if (made[0]) {
        out.runs.push(made[0].id);
        open.push(made[0].id);
      }
      if (refused[0]) {
        events.push(...quotaEvents(refused));
        out.quotaSkipped++;
        out.refusal = refused[0].refusal;
      }
    }
    await recordEvents(tx, events);
    if (out.skipped || out.quotaSkipped)
      await tx.query(
        `UPDATE schedules SET overlap_skipped_count = overlap_skipped_count + $2,
                quota_skipped_count = quota_skipped_count + $3 WHERE id = $1`,
        [s.id, out.skipped, out.quotaSkipped],
      );
    return out;
  });
}

async function scheduleFor(principal: Principal, rawId: string): Promise<ScheduleModel> {
  const id = parseIdOr404(rawId, "Schedule not found");
  const s = await db().schedule.findFirst({ where: { id, ...tenantScope(principal) } });
  if (!s) throw notFound("Schedule not found");
  return s;
}

/**
 * Runs the schedule now, once (a run for this instant); by default beside an open run. The run
 * passes the quotas of the schedule's owner and tenant (whoever triggers it): refused, it is
 * recorded (quota_skipped) and the answer is that 429 `quota_exceeded`.
 */
export async function triggerSchedule(principal: Principal, rawId: string, body: unknown = {}): Promise<RunsMade> {
  const { overlapPolicy } = parseOrThrow(triggerSchema, body ?? {});
  const s = await scheduleFor(principal, rawId);
  const [clock] = await db().$queryRaw<{ now: Date }[]>`SELECT now() AS now`;
  const { refusal, ...out } = await runOccurrences(s, [clock!.now], overlapPolicy);
  await recordAudit(principal, {
    action: "schedule.trigger",
    targetType: "schedule",
    targetIds: [s.id],
    tenantId: s.tenantId,
    details: { runs: out.runs, quotaSkipped: out.quotaSkipped },
  });
  if (refusal) {
    // The quota is the owner's (or the tenant's), not the caller's: the message says whose.
    const whose = { jobs_per_user: "its owner's", jobs_per_tenant: "the tenant's", export_bytes: "the tenant's" };
    const e = refusalError(refusal);
    throw new AppError(
      "quota_exceeded",
      `Not run: ${refusal.quota} — this schedule counts against ${whose[refusal.quota]} quota, which is used up (${refusal.used} of ${refusal.limit}); the occurrence is recorded as not run`,
      undefined,
      e.extras,
    );
  }
  return out;
}

/**
 * A run for every occurrence in [from, to] that has none yet, oldest first, under its own overlap
 * rule; each passes the quotas of the schedule's owner and tenant, and one refused is recorded
 * (quota_skipped) and counted in `quotaSkipped`.
 */
export async function backfillSchedule(
  principal: Principal,
  rawId: string,
  body: unknown,
): Promise<RunsMade & { occurrences: number }> {
  const b = parseOrThrow(backfillSchema, body);
  const s = await scheduleFor(principal, rawId);
  const timing = { cron: s.cron, timezone: s.timezone, startAt: s.startAt, endAt: s.endAt };
  const from = new Date(b.from);
  const occurrences = occurrencesBetween(timing, new Date(from.getTime() - 1), new Date(b.to), MAX_BACKFILL + 1);
  if (occurrences.length > MAX_BACKFILL) {
    throw new AppError(
      "invalid_input",
      `Invalid input: to: the range holds more than ${MAX_BACKFILL} occurrences; backfill it in parts`,
      [{ path: "to", message: `the range holds more than ${MAX_BACKFILL} occurrences; backfill it in parts` }],
    );
  }
  const { refusal: _refusal, ...out } = await runOccurrences(s, occurrences, b.overlapPolicy);
  await recordAudit(principal, {
    action: "schedule.backfill",
    targetType: "schedule",
    targetIds: [s.id],
    tenantId: s.tenantId,
    details: {
      from: b.from,
      to: b.to,
      overlapPolicy: b.overlapPolicy,
      runs: out.runs.length,
      quotaSkipped: out.quotaSkipped,
    },
  });
  return { ...out, occurrences: occurrences.length };
}

export const runsQuerySchema = z.object({
  cursor: z.string().max(200).optional(),
  limit: z.coerce.number({ error: "must be a number" }).int().min(1).max(100).default(20),
});

/** The schedule's runs, newest occurrence first, keyset-paged. */
export async function listScheduleRuns(
  principal: Principal,
  rawId: string,
  rawQuery: unknown = {},
): Promise<{ runs: JobDto[]; nextCursor: string | null }> {
  const q = parseOrThrow(runsQuerySchema, rawQuery);
  const s = await scheduleFor(principal, rawId);
  const cursor = q.cursor ? decodeCursor(q.cursor) : null;
  const rows = await db().job.findMany({
    where: {
      scheduleId: s.id,
      ...(cursor
        ? {
            OR: [{ scheduledFor: { lt: cursor.createdAt } }, { scheduledFor: cursor.createdAt, id: { lt: cursor.id } }],
          }
        : {}),
    },
    orderBy: [{ scheduledFor: "desc" }, { id: "desc" }],
    take: q.limit + 1,
    include: { files: true },
  });
  const page = rows.slice(0, q.limit);
  const last = page[page.length - 1];
  const scopes = await pauseScopesFor(page);
  return {
    runs: page.map((j) => jobView(j, j.files, scopes)),
    nextCursor: rows.length > q.limit && last ? encodeCursor({ createdAt: last.scheduledFor!, id: last.id }) : null,
  };
}

/** Occurrences that made no run (missed, skipped, buffered) and runs cancelled by a newer one, newest first. */
export async function listScheduleEvents(principal: Principal, rawId: string): Promise<{ events: ScheduleEventDto[] }> {
  const s = await scheduleFor(principal, rawId);
  const rows = await db().scheduleEvent.findMany({ where: { scheduleId: s.id }, orderBy: { id: "desc" }, take: 100 });
  return {
    events: rows.map((e) => ({
      id: String(e.id),
      kind: e.kind as EventKind,
      scheduledFor: e.scheduledFor.toISOString(),
      jobId: e.jobId,
      quota: e.quota as RunRefusal["quota"] | null,
      at: e.at.toISOString(),
    })),
  };
}
