import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { POST as createExportRoute } from "@/app/api/v1/exports/route";
import { GET as scheduleRoute } from "@/app/api/v1/schedules/[id]/route";
import { POST as createScheduleRoute } from "@/app/api/v1/schedules/route";
import { createApiTokenForEmail } from "@/lib/auth/tokens";
import { db, pool } from "@/lib/db";
import { cancelJob } from "@/lib/jobs/actions";
import { schedulerTick } from "@/lib/schedules/scheduler";
import {
  backfillSchedule,
  createSchedule,
  deleteSchedule,
  getSchedule,
  listScheduleEvents,
  pauseSchedule,
  triggerSchedule,
  updateSchedule,
} from "@/lib/schedules/service";
import { useTestDatabase } from "../helpers/db";
import { drainJobs, isCode } from "../helpers/fixtures";

const fx = useTestDatabase({ seed: 0.001 });

const orders = { dataset: "orders", format: "csv" };
let n = 0;
const name = (what: string) => `${what} ${++n}`;

/** Pretends every scheduler was down: the schedule's next run goes back to `sql` (a timestamptz expression). */
async function rewind(id: string, sql: string): Promise<void> {
  await pool().query(`UPDATE schedules SET next_run_at = ${sql} WHERE id = $1`, [id]);
}
async function runsOf(
  id: string,
): Promise<{ id: string; status: string; scheduledFor: Date; input: { filter?: { from?: string; to?: string } } }[]> {
  const { rows } = await pool().query(
    `SELECT j.id, j.status::text, r.scheduled_for AS "scheduledFor", j.input
       FROM schedule_runs r JOIN jobs j ON j.id = r.job_id WHERE r.schedule_id = $1 ORDER BY r.scheduled_for`,
    [id],
  );
  return rows;
}
async function midnights(back: number): Promise<Date[]> {
  const { rows } = await pool().query<{ t: Date }>(
    `SELECT date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' - make_interval(days => d) AS t
       FROM generate_series($1::int, 0, -1) AS d`,
    [back],
  );
  return rows.map((r) => r.t);
}

describe("the API", () => {
  test("201 with the next five runs in the schedule's zone; a bad cron or zone is a 400 naming the field; another tenant's is 404", async () => {
    const token = await createApiTokenForEmail("ada@acme.test", "schedules");
    const post = (body: unknown) =>
      createScheduleRoute(
        new Request("http://test/api/v1/schedules", {
          method: "POST",
          headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
          body: JSON.stringify(body),
        }),
        { params: Promise.resolve({}) },
      );
    const res = await post({
      name: "nightly orders",
      cron: "30 2 * * *",
      timezone: "Europe/Berlin",
      task: "export",
      input: orders,
    });
    assert.equal(res.status, 201);
    const s = (await res.json()) as { id: string; nextRuns: string[]; missedRunPolicy: string; overlapPolicy: string };
    assert.equal(s.nextRuns.length, 5);
    for (const t of s.nextRuns) assert.match(t, /T02:30:00\+0[12]:00$/);
    assert.equal(s.missedRunPolicy, "once");
    assert.equal(s.overlapPolicy, "skip");

    const bad = async (body: unknown, path: string, message: RegExp) => {
      const r = await post(body);
      assert.equal(r.status, 400);
      const e = ((await r.json()) as { error: { fields: { path: string; message: string }[] } }).error;
      const field = e.fields.find((f) => f.path === path);
      assert.ok(field, `expected a field error on ${path}: ${JSON.stringify(e)}`);
      assert.match(field.message, message);
    };
    await bad({ name: "x", cron: "61 * * * *", task: "export", input: orders }, "cron", /minute/);
    await bad({ name: "x", cron: "* * *", task: "export", input: orders }, "cron", /5 fields/);
    await bad(
      { name: "x", cron: "0 * * * *", timezone: "Mars/Olympus", task: "export", input: orders },
      "timezone",
      /IANA/,
    );
    await bad({ name: "x", cron: "0 * * * *", task: "probe_secret", input: {} }, "task", /must be one of/);
    await bad(
      { name: "x", cron: "0 * * * *", task: "export", input: { dataset: "nope" } },
      "input.dataset",
      /must be one of/,
    );
    const dup = await post({ name: "nightly orders", cron: "0 * * * *", task: "export", input: orders });
    assert.equal(dup.status, 409);

    const gusToken = await createApiTokenForEmail("gus@globex.test", "schedules");
    const other = await scheduleRoute(
      new Request(`http://test/api/v1/schedules/${s.id}`, { headers: { Authorization: `Bearer ${gusToken}` } }),
      { params: Promise.resolve({ id: s.id }) },
    );
    assert.equal(other.status, 404);
    await assert.rejects(pauseSchedule(fx.p.gus, s.id, true), isCode("not_found"));
    await assert.rejects(triggerSchedule(fx.p.gus, s.id), isCode("not_found"));
    await assert.rejects(deleteSchedule(fx.p.gus, s.id), isCode("not_found"));
    await deleteSchedule(fx.p.ada, s.id);
  });
});

describe("missed runs after every scheduler was down", () => {
  test("once: one run, for the latest missed occurrence; the rest are counted", async () => {
    const s = await createSchedule(fx.p.ada, { name: name("once"), cron: "0 0 * * *", task: "export", input: orders });
    await rewind(s.id, "date_trunc('day', now()) - interval '10 days'");
    await schedulerTick();
    const runs = await runsOf(s.id);
    const days = await midnights(10);
    assert.equal(runs.length, 1);
    assert.equal(runs[0]!.scheduledFor.getTime(), days[days.length - 1]!.getTime());
    const after = await getSchedule(fx.p.ada, s.id);
    assert.equal(after.missedCount, 10);
    assert.ok(new Date(after.nextRunAt!) > new Date());
    assert.equal((await listScheduleEvents(fx.p.ada, s.id)).events.filter((e) => e.kind === "missed").length, 10);
    // A second tick (another process) finds nothing more to do.
    await schedulerTick();
    assert.equal((await runsOf(s.id)).length, 1);
  });

  test("skip: no run; every missed occurrence is counted and the next is in the future", async () => {
    const s = await createSchedule(fx.p.ada, {
      name: name("skip"),
      cron: "0 0 * * *",
      task: "export",
      input: orders,
      missedRunPolicy: "skip",
    });
    await rewind(s.id, "date_trunc('day', now()) - interval '10 days'");
    await schedulerTick();
    assert.equal((await runsOf(s.id)).length, 0);
    assert.equal((await getSchedule(fx.p.ada, s.id)).missedCount, 11);
  });

  test("all: every missed occurrence inside the catch-up window, at most maxCatchup, oldest first", async () => {
    // A window that starts at noon four days ago whatever the time of day (3.5 days from now left
    // out the midnight three days ago from noon UTC on): the midnights of the last three days and
    // today are inside it.
    const [threeDaysAgo] = await midnights(3);
    const catchupWindowSeconds = Math.round((Date.now() - threeDaysAgo!.getTime()) / 1000) + 12 * 3_600;
    const s = await createSchedule(fx.p.ada, {
      name: name("all"),
      cron: "0 0 * * *",
      task: "export",
      input: orders,
      missedRunPolicy: "all",
      overlapPolicy: "allow",
      catchupWindowSeconds,
      maxCatchup: 2,
    });
    await rewind(s.id, "date_trunc('day', now()) - interval '10 days'");
    await schedulerTick();
    const days = await midnights(3);
    assert.deepEqual(
      (await runsOf(s.id)).map((r) => r.scheduledFor.getTime()),
      days.slice(0, 2).map((d) => d.getTime()),
    );
    assert.equal((await getSchedule(fx.p.ada, s.id)).missedCount, 9);

    const wide = await createSchedule(fx.p.ada, {
      name: name("all wide"),
      cron: "0 0 * * *",
      task: "export",
      input: orders,
      missedRunPolicy: "all",
      overlapPolicy: "allow",
    });
    await rewind(wide.id, "date_trunc('day', now()) - interval '10 days'");
    await schedulerTick();
    // The default window is a day: yesterday's and today's midnights (the window opens at this time yesterday).
    assert.equal((await runsOf(wide.id)).length, 1);
  });
});

describe("overlap", () => {
  const probe = { sleepMs: 0 };
  async function withOpenRun(policy: string) {
    const s = await createSchedule(
      fx.p.ada,
      {
        name: name(`overlap ${policy}`),
        cron: "0 0 1 1 *",
        task: "probe",
        input: probe,
        overlapPolicy: policy,
      },
      { internal: true },
    );
    const { runs } = await triggerSchedule(fx.p.ada, s.id);
    assert.equal(runs.length, 1);
    await rewind(s.id, "now() - interval '1 second'");
    await schedulerTick();
    return { s, open: runs[0]!, runs: await runsOf(s.id) };
  }

  test("skip: the occurrence is recorded, not run", async () => {
    const { s, runs } = await withOpenRun("skip");
    assert.equal(runs.length, 1);
    assert.equal((await getSchedule(fx.p.ada, s.id)).overlapSkippedCount, 1);
    assert.deepEqual(
      (await listScheduleEvents(fx.p.ada, s.id)).events.map((e) => e.kind),
      ["overlap_skipped"],
    );
  });

  test("allow: it runs beside the open one", async () => {
    const { runs } = await withOpenRun("allow");
    assert.equal(runs.length, 2);
  });

  test("cancel_other: the open run is cancelled, the new one runs", async () => {
    const { open, runs } = await withOpenRun("cancel_other");
    assert.equal(runs.length, 2);
    assert.equal(runs.find((r) => r.id === open)!.status, "cancelled");
    assert.equal(runs.find((r) => r.id !== open)!.status, "queued");
  });

  test("buffer_one: one run waits for the open one to end, a second is skipped", async () => {
    const { s, runs } = await withOpenRun("buffer_one");
    assert.equal(runs.length, 1);
    assert.ok((await getSchedule(fx.p.ada, s.id)).bufferedFor);
    await rewind(s.id, "now() - interval '1 second'");
    await schedulerTick();
    assert.equal((await runsOf(s.id)).length, 1, "at most one waits");
    assert.equal((await getSchedule(fx.p.ada, s.id)).overlapSkippedCount, 1);
    await drainJobs();
    await schedulerTick();
    const after = await runsOf(s.id);
    assert.equal(after.length, 2, "the buffered run starts once the open one ended");
    assert.equal((await getSchedule(fx.p.ada, s.id)).bufferedFor, null);
  });
});

describe("exactly once", () => {
  test("ten schedulers racing over 40 due schedules make one run per occurrence", async () => {
    // 120 runs of one member: within the quotas, which are not what this test is about.
    await pool().query(
      "UPDATE tenants SET quota_jobs_per_user = 100000, quota_jobs_per_tenant = 100000 WHERE id = $1",
      [fx.p.globexId],
    );
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) {
      ids.push(
        (
          await createSchedule(
            fx.p.gus,
            {
              name: name("race"),
              cron: "* * * * * *",
              task: "probe",
              input: {},
              overlapPolicy: "allow",
            },
            { internal: true },
          )
        ).id,
      );
    }
    await pool().query(
      `UPDATE schedules SET next_run_at = date_trunc('second', now()) - interval '2 seconds' WHERE id = ANY($1::uuid[])`,
      [ids],
    );
    await Promise.all(Array.from({ length: 10 }, () => schedulerTick()));
    const { rows } = await pool().query<{ dup: number; runs: number }>(
      `SELECT count(*) FILTER (WHERE c > 1)::int AS dup, coalesce(sum(c), 0)::int AS runs
         FROM (SELECT count(*) AS c FROM schedule_runs WHERE schedule_id = ANY($1::uuid[])
                GROUP BY schedule_id, scheduled_for) x`,
      [ids],
    );
    assert.equal(rows[0]!.dup, 0);
    assert.ok(rows[0]!.runs >= 40 * 3, `each schedule ran its three due seconds (${rows[0]!.runs})`);
    for (const id of ids) await deleteSchedule(fx.p.gus, id);
    await pool().query("UPDATE tenants SET quota_jobs_per_user = NULL, quota_jobs_per_tenant = NULL WHERE id = $1", [
      fx.p.globexId,
    ]);
  });
});

describe("operations", () => {
  test("backfill makes a run per occurrence in the range, once; since lastRun chains the windows", async () => {
    const s = await createSchedule(fx.p.ada, {
      name: name("incremental"),
      cron: "0 * * * *",
      task: "export",
      input: { ...orders, filter: { since: "lastRun" } },
      paused: true,
    });
    const body = { from: "2026-01-01T00:00:00Z", to: "2026-01-01T03:00:00Z" };
    const first = await backfillSchedule(fx.p.ada, s.id, body);
    assert.equal(first.occurrences, 4);
    assert.equal(first.runs.length, 4);
    const again = await backfillSchedule(fx.p.ada, s.id, body);
    assert.equal(again.runs.length, 0, "an occurrence that has its run gets no second one");
    const runs = await runsOf(s.id);
    assert.equal(runs[0]!.input.filter?.from, undefined, "the first run has no lower bound");
    assert.equal(runs[0]!.input.filter?.to, "2026-01-01T00:00:00.000Z");
    assert.equal(runs[1]!.input.filter?.from, "2026-01-01T00:00:00.000Z");
    assert.equal(runs[1]!.input.filter?.to, "2026-01-01T01:00:00.000Z");
    assert.equal(runs[3]!.input.filter?.from, "2026-01-01T02:00:00.000Z");
    await assert.rejects(
      backfillSchedule(fx.p.ada, s.id, { from: "2026-01-01T00:00:00Z", to: "2026-03-01T00:00:00Z" }),
      (e: unknown) => isCode("invalid_input")(e) && (e as { fields: { path: string }[] }).fields[0]!.path === "to",
    );
    // The rows of each window are exported once: the windows meet without overlap.
    await drainJobs();
    const done = await runsOf(s.id);
    assert.ok(done.every((r) => r.status === "succeeded"));
  });

  test("pause holds runs; resume goes on from now; edit recomputes; every change is audited", async () => {
    const s = await createSchedule(fx.p.ada, { name: name("ops"), cron: "0 0 * * *", task: "export", input: orders });
    await pauseSchedule(fx.p.ada, s.id, true);
    await rewind(s.id, "now() - interval '1 second'");
    await schedulerTick();
    assert.equal((await runsOf(s.id)).length, 0);
    const resumed = await pauseSchedule(fx.p.ada, s.id, false);
    assert.ok(new Date(resumed.nextRunAt!) > new Date());
    await schedulerTick();
    assert.equal((await runsOf(s.id)).length, 0, "what fell due while paused is not run");
    const edited = await updateSchedule(fx.p.ada, s.id, { cron: "15 6 * * 1", timezone: "Asia/Kolkata" });
    assert.match(edited.nextRuns[0]!, /T06:15:00\+05:30$/);
    await assert.rejects(updateSchedule(fx.p.ada, s.id, { cron: "nope" }), isCode("invalid_input"));
    const { rows } = await pool().query<{ action: string }>(
      "SELECT action FROM audit_logs WHERE $1 = ANY(target_ids) ORDER BY created_at",
      [s.id],
    );
    assert.deepEqual(
      rows.map((r) => r.action),
      ["schedule.create", "schedule.pause", "schedule.resume", "schedule.update"],
    );
  });

  test("delete cancels waiting runs and keeps finished ones with their occurrence", async () => {
    const s = await createSchedule(
      fx.p.ada,
      {
        name: name("delete"),
        cron: "0 0 1 1 *",
        task: "probe",
        input: {},
        overlapPolicy: "allow",
      },
      { internal: true },
    );
    const done = (await triggerSchedule(fx.p.ada, s.id)).runs[0]!;
    await drainJobs();
    const waiting = (await triggerSchedule(fx.p.ada, s.id)).runs[0]!;
    const r = await deleteSchedule(fx.p.ada, s.id);
    assert.equal(r.cancelledRuns, 1);
    const jobs = await db().job.findMany({ where: { id: { in: [done, waiting] } }, include: { scheduleRun: true } });
    const byId = new Map(jobs.map((j) => [j.id, j]));
    assert.equal(byId.get(done)!.status, "succeeded");
    assert.ok(byId.get(done)!.scheduleRun?.scheduledFor);
    assert.equal(byId.get(done)!.scheduleRun?.scheduleId, null, "a deleted schedule's runs keep their occurrence");
    assert.equal(byId.get(waiting)!.status, "cancelled");
    await assert.rejects(getSchedule(fx.p.ada, s.id), isCode("not_found"));
  });
});

describe("delayed one-off exports", () => {
  test("runAt: 202 scheduled, cancellable until it starts, runs once due; over a year ahead is a 400", async () => {
    const token = await createApiTokenForEmail("ada@acme.test", "delayed");
    const post = (body: unknown) =>
      createExportRoute(
        new Request("http://test/api/v1/exports", {
          method: "POST",
          headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
          body: JSON.stringify(body),
        }),
        { params: Promise.resolve({}) },
      );
    const runAt = new Date(Date.now() + 1_500).toISOString();
    const res = await post({ ...orders, runAt });
    assert.equal(res.status, 202);
    const job = (await res.json()) as { id: string; status: string; runAt: string; input: Record<string, unknown> };
    assert.equal(job.status, "scheduled");
    assert.equal(new Date(job.runAt).getTime(), new Date(runAt).getTime());
    assert.equal(job.input.runAt, undefined, "runAt is not part of the export's input");

    const other = (await (await post({ ...orders, runAt })).json()) as { id: string };
    assert.equal((await cancelJob(fx.p.ada, other.id)).status, "cancelled");

    await schedulerTick();
    assert.equal(
      (await db().job.findUniqueOrThrow({ where: { id: job.id } })).status,
      "scheduled",
      "not before its time",
    );
    await sleep(new Date(runAt).getTime() - Date.now() + 50);
    await schedulerTick();
    await drainJobs();
    assert.equal((await db().job.findUniqueOrThrow({ where: { id: job.id } })).status, "succeeded");
    assert.equal((await db().job.findUniqueOrThrow({ where: { id: other.id } })).status, "cancelled");

    const far = await post({ ...orders, runAt: new Date(Date.now() + 400 * 86_400_000).toISOString() });
    assert.equal(far.status, 400);
    assert.equal(((await far.json()) as { error: { fields: { path: string }[] } }).error.fields[0]!.path, "runAt");
  });
});
