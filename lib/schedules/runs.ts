/**
 * A schedule's runs on demand (trigger, backfill) and its history (runs, events): each run
 * passes the quotas of the schedule's owner and tenant, and is audited.
 */
import { z } from "zod";
import { recordAudit } from "../audit";
import type { Principal } from "../auth/principal";
import { db, inTransaction } from "../db";
import { AppError, parseOrThrow } from "../errors";
import type { ScheduleModel } from "../generated/prisma/models";
import { decodeCursor, encodeCursor } from "../jobs/queries";
import { insertScheduledRuns } from "../jobs/enqueue";
import { requestCancel } from "../jobs/transitions";
import type { JobDto } from "../jobs/dto";
import { pauseScopesFor } from "../jobs/pause-scopes";
import { jobView } from "../jobs/view";
import type { RunRefusal } from "../jobs/sql/gate-scheduled-runs";
import { refusalError } from "../tenants/quotas";
import { occurrencesBetween } from "./cron";
import { quotaEvents, recordEvents, runRow, type Event, type EventKind } from "./materialize";
import { backfillSchema, MAX_BACKFILL, triggerSchema, type MissedRunPolicy, type OverlapPolicy } from "./schema";
import { scheduleFor, type ScheduleEventDto } from "./dto";

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
      `SELECT j.id FROM schedule_runs r JOIN jobs j ON j.id = r.job_id
        WHERE r.schedule_id = $1 AND j.status IN ('scheduled', 'queued', 'running', 'retrying')`,
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
        "SELECT max(scheduled_for) AS last FROM schedule_runs WHERE schedule_id = $1 AND scheduled_for < $2",
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
  const rows = await db().scheduleRun.findMany({
    where: {
      scheduleId: s.id,
      ...(cursor
        ? {
            OR: [
              { scheduledFor: { lt: cursor.createdAt } },
              { scheduledFor: cursor.createdAt, jobId: { lt: cursor.id } },
            ],
          }
        : {}),
    },
    orderBy: [{ scheduledFor: "desc" }, { jobId: "desc" }],
    take: q.limit + 1,
    include: { job: { include: { files: true } } },
  });
  const page = rows.slice(0, q.limit);
  const last = page[page.length - 1];
  const scopes = await pauseScopesFor(page.map((r) => r.job));
  return {
    runs: page.map(({ job, ...run }) => jobView({ ...job, scheduleRun: run }, job.files, scopes)),
    nextCursor: rows.length > q.limit && last ? encodeCursor({ createdAt: last.scheduledFor, id: last.jobId }) : null,
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
