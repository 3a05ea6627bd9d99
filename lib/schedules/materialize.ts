/**
 * The scheduler's work, one tick at a time; any number of processes may run it
 * at once. A due schedule is claimed with FOR UPDATE SKIP LOCKED (no elected
 * leader that could be wrong), its occurrences since the last tick become runs
 * by its missed-run and overlap policies, and the unique (schedule_id,
 * scheduled_for) of schedule_runs makes a second run of one occurrence impossible, even
 * if a process died after inserting and before moving the schedule on.
 *
 * An occurrence is *missed* when no scheduler got to it within
 * SCHEDULE_MISSED_AFTER_MS of its time (every scheduler was down): then
 *  - skip: none of the missed runs, they are counted and recorded;
 *  - once: one run, for the latest missed occurrence;
 *  - all:  every missed occurrence inside catchupWindowSeconds, at most maxCatchup, oldest first.
 * Each run then meets the overlap policy, when an earlier run of the schedule
 * is still open (scheduled, queued, running or retrying):
 *  - skip: no run, recorded; buffer_one: it waits (one at most) and starts when
 *    the open run ends; allow: it runs beside; cancel_other: the open runs are cancelled.
 */
import type pg from "pg";
import { inTransaction, pool } from "../db";
import { scheduleSettings } from "./settings";
import { insertScheduledRuns, type RefusedRun, type ScheduledRunRow } from "../jobs/enqueue";
import type { RunRefusal } from "../jobs/sql/gate-scheduled-runs";
import { getTaskDefinition } from "../jobs/registry";
import { promoteDelayedJobs as promote, requestCancel } from "../jobs/transitions";
import { nextOccurrence, occurrencesBetween, type Timing } from "./cron";
import type { MissedRunPolicy, OverlapPolicy } from "./schema";
import { logger } from "../log";

export const SCHEDULER_CHANNEL = "conveyor_schedules";
const BATCH = 100;
/** Enumerating missed occurrences stops here (a per-second schedule down for days). */
const MAX_ENUMERATED = 10_000;
/** Missed occurrences recorded one by one, beyond which only the count grows. */
const MAX_MISSED_EVENTS = 100;
/** Stands for a run made in this tick among a schedule's open runs. */
const NEW = "(new)";

type ScheduleRow = {
  id: string;
  tenantId: string;
  cron: string;
  timezone: string;
  task: string;
  input: unknown;
  missedRunPolicy: MissedRunPolicy;
  overlapPolicy: OverlapPolicy;
  catchupWindowSeconds: number;
  maxCatchup: number;
  startAt: Date | null;
  endAt: Date | null;
  nextRunAt: Date | null;
  bufferedFor: Date | null;
  createdById: string | null;
  priority: number;
};

const SCHEDULE_COLUMNS = `s.id, s.tenant_id AS "tenantId", s.cron, s.timezone, s.task, s.input,
  s.missed_run_policy AS "missedRunPolicy", s.overlap_policy AS "overlapPolicy",
  s.catchup_window_seconds AS "catchupWindowSeconds", s.max_catchup AS "maxCatchup",
  s.start_at AS "startAt", s.end_at AS "endAt", s.next_run_at AS "nextRunAt", s.buffered_for AS "bufferedFor",
  s.created_by_id AS "createdById", s.priority`;

export type EventKind = "missed" | "overlap_skipped" | "buffered" | "cancelled_other" | "quota_skipped";
/** `quota`: on a quota_skipped event, the quota that refused the run. */
export type Event = {
  scheduleId: string;
  kind: EventKind;
  scheduledFor: Date;
  jobId?: string | null;
  quota?: RunRefusal["quota"] | null;
};

export type TickResult = {
  promoted: number;
  runs: number;
  schedules: number;
  missed: number;
  skipped: number;
  /** Runs the quotas refused. */
  quotaSkipped: number;
};

/** Delayed one-off jobs whose time came: `scheduled` → `queued` (admission takes them from there). */
export async function promoteDelayedJobs(client: Pick<pg.Pool, "query"> = pool()): Promise<number> {
  return promote(client as pg.Pool);
}

/** Runs due schedules (and buffered runs whose blocker ended) until none is left for this process. */
export async function materializeDue(): Promise<TickResult> {
  const total: TickResult = { promoted: 0, runs: 0, schedules: 0, missed: 0, skipped: 0, quotaSkipped: 0 };
  for (;;) {
    const r = await inTransaction((tx) => materializeBatch(tx));
    total.runs += r.runs;
    total.schedules += r.schedules;
    total.missed += r.missed;
    total.skipped += r.skipped;
    total.quotaSkipped += r.quotaSkipped;
    if (r.schedules < BATCH) break;
  }
  const released = await inTransaction((tx) => releaseBuffered(tx));
  total.runs += released.runs;
  total.quotaSkipped += released.quotaSkipped;
  return total;
}

/** One batch: claims up to BATCH due schedules and handles their occurrences in one transaction. */
async function materializeBatch(tx: pg.PoolClient): Promise<Omit<TickResult, "promoted">> {
  // New runs are admitted after the commit (a NOTIFY), not under this batch's admission lock.
  await tx.query("SET LOCAL conveyor.admit_inline = 'off'");
  const { rows } = await tx.query<ScheduleRow & { now: Date }>(
    `SELECT ${SCHEDULE_COLUMNS}, now() AS now FROM schedules s
      WHERE NOT s.paused AND s.next_run_at IS NOT NULL AND s.next_run_at <= now()
      ORDER BY s.next_run_at LIMIT ${BATCH} FOR UPDATE SKIP LOCKED`,
  );
  const result = { runs: 0, schedules: rows.length, missed: 0, skipped: 0, quotaSkipped: 0 };
  if (!rows.length) return result;
  const now = rows[0]!.now;
  const context = await runContext(
    tx,
    rows.map((r) => r.id),
  );
  const missedAfter = scheduleSettings().SCHEDULE_MISSED_AFTER_MS;

  const inserts: ScheduledRunRow[] = [];
  const events: Event[] = [];
  const cancels: { scheduleId: string; ids: string[]; scheduledFor: Date }[] = [];
  const updates: {
    id: string;
    next: Date | null;
    last: Date;
    buffered: Date | null;
    missed: number;
    skipped: number;
  }[] = [];

  for (const s of rows) {
    const timing: Timing = s;
    const first = s.nextRunAt!;
    const threshold = new Date(now.getTime() - missedAfter);
    const due = [first, ...occurrencesBetween(timing, first, now, MAX_ENUMERATED)];
    const onTime = due.filter((t) => t >= threshold);
    const missed = due.filter((t) => t < threshold);
    let chosen: Date[] = [];
    if (s.missedRunPolicy === "once" && missed.length) chosen = [missed[missed.length - 1]!];
    if (s.missedRunPolicy === "all") {
      const windowStart = now.getTime() - s.catchupWindowSeconds * 1000;
      chosen = missed.filter((t) => t.getTime() >= windowStart).slice(0, s.maxCatchup);
    }
    const dropped = missed.filter((t) => !chosen.includes(t));
    for (const t of dropped.slice(-MAX_MISSED_EVENTS))
      events.push({ scheduleId: s.id, kind: "missed", scheduledFor: t });

    const ctx = context.get(s.id)!;
    let buffered = s.bufferedFor;
    let skipped = 0;
    // A buffered run whose blocker ended goes first: it is older than anything due now.
    if (buffered && !ctx.open.length) {
      const run = runRow(s, buffered, ctx.last);
      if (run) {
        inserts.push(run);
        ctx.last = buffered;
        ctx.open.push(NEW);
      }
      buffered = null;
    }
    for (const t of [...chosen, ...onTime]) {
      if (ctx.open.length) {
        if (s.overlapPolicy === "skip") {
          events.push({ scheduleId: s.id, kind: "overlap_skipped", scheduledFor: t });
          skipped++;
          continue;
        }
        if (s.overlapPolicy === "buffer_one") {
          if (buffered) {
            events.push({ scheduleId: s.id, kind: "overlap_skipped", scheduledFor: t });
            skipped++;
          } else {
            buffered = t;
            events.push({ scheduleId: s.id, kind: "buffered", scheduledFor: t });
          }
          continue;
        }
        if (s.overlapPolicy === "cancel_other") {
          // A run made earlier in this tick (a catch-up) would be cancelled at once: it is not made.
          const earlier = inserts.findLastIndex((r) => r.scheduleId === s.id);
          if (ctx.open.includes(NEW) && earlier >= 0) {
            events.push({ scheduleId: s.id, kind: "cancelled_other", scheduledFor: inserts[earlier]!.scheduledFor });
            inserts.splice(earlier, 1);
          }
          cancels.push({ scheduleId: s.id, ids: ctx.open.filter((id) => id !== NEW), scheduledFor: t });
          ctx.open = [];
        }
      }
      const run = runRow(s, t, ctx.last);
      if (run) {
        inserts.push(run);
        ctx.last = t;
        ctx.open.push(NEW);
      }
    }
    const next = nextOccurrence(timing, due[due.length - 1]! > now ? due[due.length - 1]! : now);
    updates.push({ id: s.id, next, last: due[due.length - 1]!, buffered, missed: dropped.length, skipped });
    result.missed += dropped.length;
    result.skipped += skipped;
  }

  for (const c of cancels) {
    const cancelled = await requestCancel(tx, c.ids, `Replaced by the run for ${c.scheduledFor.toISOString()}`);
    for (const id of cancelled) {
      events.push({ scheduleId: c.scheduleId, kind: "cancelled_other", scheduledFor: c.scheduledFor, jobId: id });
    }
  }
  // (A run the quotas refuse below was taken as open by the overlap rule for the runs after it in
  // this tick: those are refused too, or skipped for an overlap, and the next tick sees it never ran.)
  const { made, refused } = await insertScheduledRuns(tx, inserts);
  result.runs = made.length;
  result.quotaSkipped = refused.length;
  events.push(...quotaEvents(refused));
  const refusedBy = countBySchedule(refused);
  await recordEvents(tx, events);
  await tx.query(
    `UPDATE schedules s SET next_run_at = u.next, last_occurrence_at = u.last, buffered_for = u.buffered,
            missed_count = s.missed_count + u.missed, overlap_skipped_count = s.overlap_skipped_count + u.skipped,
            quota_skipped_count = s.quota_skipped_count + u.refused
       FROM unnest($1::uuid[], $2::timestamptz[], $3::timestamptz[], $4::timestamptz[], $5::int[], $6::int[],
                   $7::int[])
         AS u(id, next, last, buffered, missed, skipped, refused)
      WHERE s.id = u.id`,
    [
      updates.map((u) => u.id),
      updates.map((u) => u.next),
      updates.map((u) => u.last),
      updates.map((u) => u.buffered),
      updates.map((u) => u.missed),
      updates.map((u) => u.skipped),
      updates.map((u) => refusedBy.get(u.id) ?? 0),
    ],
  );
  return result;
}

/** Buffered runs (buffer_one) whose schedule has no open run any more: they start now (if the quotas let them). */
async function releaseBuffered(tx: pg.PoolClient): Promise<{ runs: number; quotaSkipped: number }> {
  await tx.query("SET LOCAL conveyor.admit_inline = 'off'");
  const { rows } = await tx.query<ScheduleRow>(
    `SELECT ${SCHEDULE_COLUMNS} FROM schedules s
      WHERE s.buffered_for IS NOT NULL AND NOT s.paused
        AND NOT EXISTS (SELECT 1 FROM schedule_runs r JOIN jobs j ON j.id = r.job_id WHERE r.schedule_id = s.id
                          AND j.status IN ('scheduled', 'queued', 'running', 'retrying'))
      LIMIT ${BATCH} FOR UPDATE OF s SKIP LOCKED`,
  );
  if (!rows.length) return { runs: 0, quotaSkipped: 0 };
  // Checked again in a statement of its own: a schedule locked after another process committed
  // its batch is re-read by the lock, but the NOT EXISTS above still saw the older snapshot, in
  // which the run that batch just made (the previous buffered one) did not exist yet.
  const context = await runContext(
    tx,
    rows.map((r) => r.id),
  );
  const free = rows.filter((s) => context.get(s.id)!.open.length === 0);
  if (!free.length) return { runs: 0, quotaSkipped: 0 };
  const runs = free.flatMap((s) => runRow(s, s.bufferedFor!, context.get(s.id)!.last) ?? []);
  const { made, refused } = await insertScheduledRuns(tx, runs);
  await recordEvents(tx, quotaEvents(refused));
  const refusedBy = countBySchedule(refused);
  await tx.query(
    `UPDATE schedules s SET buffered_for = NULL, quota_skipped_count = s.quota_skipped_count + u.refused
       FROM unnest($1::uuid[], $2::int[]) AS u(id, refused) WHERE s.id = u.id`,
    [free.map((r) => r.id), free.map((r) => refusedBy.get(r.id) ?? 0)],
  );
  return { runs: made.length, quotaSkipped: refused.length };
}

/** A quota_skipped event per run the quotas refused. */
export function quotaEvents(refused: RefusedRun[]): Event[] {
  return refused.map(({ run, refusal }) => ({
    scheduleId: run.scheduleId,
    kind: "quota_skipped",
    scheduledFor: run.scheduledFor,
    quota: refusal.quota,
  }));
}

function countBySchedule(refused: RefusedRun[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const { run } of refused) counts.set(run.scheduleId, (counts.get(run.scheduleId) ?? 0) + 1);
  return counts;
}

/** Per schedule: its open runs, and the occurrence of its latest run (for `since: "lastRun"`). */
async function runContext(
  client: pg.PoolClient,
  ids: string[],
): Promise<Map<string, { open: string[]; last: Date | null }>> {
  const { rows } = await client.query<{ id: string; open: string[] | null; last: Date | null }>(
    `SELECT s.id,
            (SELECT array_agg(j.id) FROM schedule_runs r JOIN jobs j ON j.id = r.job_id WHERE r.schedule_id = s.id
               AND j.status IN ('scheduled', 'queued', 'running', 'retrying')) AS open,
            (SELECT max(r.scheduled_for) FROM schedule_runs r WHERE r.schedule_id = s.id) AS last
       FROM unnest($1::uuid[]) AS s(id)`,
    [ids],
  );
  return new Map(rows.map((r) => [r.id, { open: r.open ?? [], last: r.last }]));
}

/** The run of one occurrence, with the task's own input for it; null (logged) if the task cannot make one. */
export function runRow(s: ScheduleRow, scheduledFor: Date, previous: Date | null): ScheduledRunRow | null {
  const def = getTaskDefinition(s.task);
  if (!def?.schedulable) {
    logger.error(
      { scheduleId: s.id, tenantId: s.tenantId },
      `[scheduler] schedule ${s.id}: task type ${s.task} cannot be scheduled; occurrence skipped`,
    );
    return null;
  }
  const previousScheduledFor = previous && previous < scheduledFor ? previous : null;
  return {
    tenantId: s.tenantId,
    type: s.task,
    input: def.schedulable.runInput(def.schedulable.inputSchema.parse(s.input), { scheduledFor, previousScheduledFor }),
    createdById: s.createdById,
    priority: s.priority,
    scheduleId: s.id,
    scheduledFor,
  };
}

export async function recordEvents(client: Pick<pg.PoolClient, "query">, events: Event[]): Promise<void> {
  if (!events.length) return;
  await client.query(
    `INSERT INTO schedule_events (schedule_id, kind, scheduled_for, job_id, quota)
     SELECT * FROM unnest($1::uuid[], $2::text[], $3::timestamptz[], $4::uuid[], $5::text[])`,
    [
      events.map((e) => e.scheduleId),
      events.map((e) => e.kind),
      events.map((e) => e.scheduledFor),
      events.map((e) => e.jobId ?? null),
      events.map((e) => e.quota ?? null),
    ],
  );
}

/** How long the scheduler may sleep: until the next schedule or delayed job is due (ms, ≥ 0), or null for nothing. */
export async function msUntilNextDue(): Promise<number | null> {
  const { rows } = await pool().query<{ ms: number | null }>(
    `SELECT (extract(epoch FROM least(
               (SELECT min(next_run_at) FROM schedules WHERE NOT paused AND next_run_at IS NOT NULL),
               (SELECT min(run_at) FROM jobs WHERE status = 'scheduled'),
               (SELECT now() FROM schedules WHERE buffered_for IS NOT NULL AND NOT paused LIMIT 1) + interval '500 milliseconds'
             ) - now()) * 1000)::float8 AS ms`,
  );
  const ms = rows[0]?.ms;
  return ms === null || ms === undefined ? null : Math.max(0, ms);
}
