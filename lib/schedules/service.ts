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
import { db, inTransaction, Prisma } from "../db";
import { AppError, notFound, parseOrThrow } from "../errors";
import type { ScheduleModel } from "../generated/prisma/models";
import { parseIdOr404 } from "../ids";
import { allowedPriority } from "../jobs/priority";
import { getTaskDefinition } from "../jobs/registry";
import { requestCancel } from "../jobs/transitions";
import { scheduleSettings } from "./settings";
import { nextOccurrence } from "./cron";
import { SCHEDULER_CHANNEL } from "./materialize";
import { countTenantSchedules } from "./sql/count-tenant-schedules";
import { lockTenantSchedules } from "./sql/lock-tenant-schedules";
import { createScheduleSchema, updateScheduleSchema } from "./schema";
import { lastRuns, scheduleFor, scheduleInclude, schedulableTasks, toDto, view, type ScheduleDto } from "./dto";

export { schedulableTasks, type ScheduleDto, type ScheduleEventDto } from "./dto";
export {
  backfillSchedule,
  listScheduleEvents,
  listScheduleRuns,
  runsQuerySchema,
  triggerSchedule,
  type RunsMade,
} from "./runs";

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
  const priority = await allowedPriority(tenantId, b.priority);
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
          priority,
        },
        include: scheduleInclude,
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
    include: scheduleInclude,
  });
  const last = await lastRuns(rows.map((r) => r.id));
  return { schedules: rows.map((r) => toDto(r, last.get(r.id) ?? null)) };
}

export async function getSchedule(principal: Principal, rawId: string): Promise<ScheduleDto> {
  const id = parseIdOr404(rawId, "Schedule not found");
  const s = await db().schedule.findFirst({ where: { id, ...tenantScope(principal) }, include: scheduleInclude });
  if (!s) throw notFound("Schedule not found");
  return view(s);
}

export async function updateSchedule(principal: Principal, rawId: string, body: unknown): Promise<ScheduleDto> {
  const b = parseOrThrow(updateScheduleSchema, body);
  const updated = await db()
    .$transaction(async (tx) => {
      const s = await lockSchedule(tx, principal, rawId);
      const input = b.input !== undefined ? checkTask(s.task, b.input) : undefined;
      const priority = b.priority !== undefined ? await allowedPriority(s.tenantId, b.priority) : undefined;
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
          ...(priority !== undefined ? { priority } : {}),
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
        include: scheduleInclude,
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
      `SELECT j.id FROM schedule_runs r JOIN jobs j ON j.id = r.job_id
        WHERE r.schedule_id = $1 AND j.status IN ('scheduled', 'queued', 'retrying')`,
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
      include: scheduleInclude,
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
