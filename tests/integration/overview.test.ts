import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createPause } from "@/lib/admission/pauses";
import { pool } from "@/lib/db";
import { AppError } from "@/lib/errors";
import { enqueueJob } from "@/lib/jobs/enqueue";
import { getOverview, rollupStats } from "@/lib/ops/stats";
import { useTestDatabase } from "../helpers/db";
import { drainJobs, isCode } from "../helpers/fixtures";

const fx = useTestDatabase();

/** Ticks until the rollup has caught up (a fresh database starts a day back, six hours a tick). */
async function rollUp() {
  let r = await rollupStats();
  let ticks = 1;
  while (!r.caughtUp) {
    assert.ok(ticks++ < 10, "catches up in a few ticks");
    r = await rollupStats();
  }
  return r;
}

async function probe(tenantId: string): Promise<string> {
  return (await enqueueJob({ tenantId, type: "probe", input: { sleepMs: 0 } })).job.id;
}

/** A job whose one attempt failed `agoMs` ago after `durationMs`; dead when `dead`. */
async function failedAttempt(tenantId: string, opts: { dead: boolean; agoMs?: number; durationMs?: number }) {
  const id = await probe(tenantId);
  const { agoMs = 0, durationMs = 40 } = opts;
  await pool().query(`UPDATE jobs SET status = 'running', attempts = 1, started_at = now() WHERE id = $1`, [id]);
  await pool().query(
    `UPDATE jobs SET status = $2::job_status, error_class = 'retryable', error_message = 'boom', admitted_at = NULL,
            finished_at = now(), run_at = now() + interval '1 hour' WHERE id = $1`,
    [id, opts.dead ? "failed" : "retrying"],
  );
  await pool().query(
    `INSERT INTO job_attempts (job_id, attempt, worker_id, fencing_token, started_at, finished_at, outcome, error_class,
                               error_message, duration_ms)
     VALUES ($1, 1, 'w-test', 1, now() - make_interval(secs => ($2::int + $3::int) / 1000.0), now() - make_interval(secs => $2::int / 1000.0),
             'failed', 'retryable', 'boom', $3)`,
    [id, agoMs, durationMs],
  );
  return id;
}

describe("the overview, fed by the rollup", () => {
  test("counts, throughput, failure rate and runtime per queue and type, per tenant", async () => {
    for (let i = 0; i < 3; i++) await probe(fx.p.acmeId);
    await probe(fx.p.globexId);
    await drainJobs();
    // Their measured runtimes vary: the first attempt in this process also opens the app pool's first
    // connection (~50 ms on a busy machine, which would put p99 in the 50–100 ms bucket). Pinned to
    // 5 ms, the histogram is what this test means: three fast successes, then two 40 ms failures.
    await pool().query(
      `UPDATE job_attempts SET duration_ms = 5
       WHERE outcome = 'succeeded' AND job_id IN (SELECT id FROM jobs WHERE type = 'probe')`,
    );
    await failedAttempt(fx.p.acmeId, { dead: true });
    await failedAttempt(fx.p.acmeId, { dead: false });
    await createPause(fx.p.oscar, { queue: "bulk", type: "probe", reason: "overview test" });
    await probe(fx.p.acmeId); // held by the pause: queued

    const before = await getOverview(fx.p.oscar, {});
    assert.equal(before.rows.length, 0, "nothing until the first rollup: the overview never scans jobs");
    assert.equal(before.countsAt, null);

    const r = await rollUp();
    assert.equal(r.ran, true);
    const o = await getOverview(fx.p.oscar, {});
    const row = o.rows.find((x) => x.queue === "bulk" && x.type === "probe");
    assert.ok(row, "a row for bulk · probe");
    assert.deepEqual(
      [row.queued, row.scheduled, row.running, row.retrying, row.dead],
      [1, 0, 0, 1, 1],
      "queued, scheduled, running, retrying, dead",
    );
    assert.ok(row.oldestQueuedAt, "the oldest queued job's age");
    assert.deepEqual([row.last5m.succeeded, row.last5m.failed], [3, 2]);
    assert.equal(row.last5m.failureRate, 0.4);
    assert.equal(row.last1h.succeeded, 3);
    // 3 in the 4-and-a-bit minutes the last 5 minute bins cover so far.
    assert.ok(row.last5m.perMinute >= 0.6 && row.last5m.perMinute <= 0.75, `per minute: ${row.last5m.perMinute}`);
    assert.ok(row.p50Ms !== null && row.p99Ms !== null && row.p50Ms <= row.p99Ms, "runtime percentiles");
    assert.ok(row.p99Ms! >= 25 && row.p99Ms! <= 50, `the 40 ms failures set p99 in the 25–50 ms bucket: ${row.p99Ms}`);
    assert.equal(o.series.hour.length, 60);
    assert.equal(o.series.day.length, 96);
    assert.equal(
      o.series.hour.reduce((a, s) => a + s.succeeded, 0),
      3,
    );
    assert.equal(
      o.series.day.reduce((a, s) => a + s.dead, 0),
      1,
    );
    assert.equal(o.totals.dead, 1);

    const gina = await getOverview(fx.p.gina, {});
    assert.equal(gina.totals.last1h.succeeded, 1, "globex sees its own job only");
    assert.equal(gina.totals.dead + gina.totals.queued, 0);
    const root = await getOverview(fx.p.root, {});
    assert.equal(root.totals.last1h.succeeded, 4, "a platform admin sees every tenant");
    const rootAcme = await getOverview(fx.p.root, { tenant: "acme" });
    assert.deepEqual(rootAcme.rows, o.rows, "…or one tenant");
  });

  test("a tick recomputes recent minutes: no double counting, late commits counted", async () => {
    const first = await getOverview(fx.p.oscar, {});
    await rollUp();
    assert.deepEqual((await getOverview(fx.p.oscar, {})).totals.last1h, first.totals.last1h, "idempotent");

    // An attempt that finished 90 s ago but committed only now (a slow transaction).
    await failedAttempt(fx.p.acmeId, { dead: false, agoMs: 90_000, durationMs: 5 });
    await rollUp();
    const after = await getOverview(fx.p.oscar, {});
    assert.equal(after.totals.last1h.failed, first.totals.last1h.failed + 1);
  });

  test("what just ran shows after one tick, also while a long gap is still being caught up", async () => {
    // The state of a database whose rollup last ran days ago (workers were down), with an
    // attempt back then to catch up on; then a job runs now.
    await pool().query(`UPDATE stats_rollup SET rolled_to = now() - interval '3 days' WHERE id = 1`);
    await failedAttempt(fx.p.globexId, { dead: false, agoMs: 2.5 * 86_400_000 });
    await probe(fx.p.acmeId);
    // (The probe queue is paused by the first test; its jobs run now.)
    await pool().query(`DELETE FROM queue_pauses`);
    await drainJobs();
    const tick = await rollupStats();
    assert.equal(tick.caughtUp, false, "one tick does not catch up three days");
    const o = await getOverview(fx.p.oscar, {});
    const [ran] = (
      await pool().query<{ n: number }>(
        `SELECT count(*)::int AS n FROM job_attempts a JOIN jobs j ON j.id = a.job_id
         WHERE j.tenant_id = $1 AND a.outcome = 'succeeded'
           AND a.finished_at >= date_trunc('minute', now()) - interval '59 minutes'`,
        [fx.p.acmeId],
      )
    ).rows;
    assert.equal(
      o.series.hour.reduce((a, p) => a + p.succeeded, 0),
      ran!.n,
      "every job that ran in the last hour is charted, the ones of this minute included",
    );
    assert.ok(
      o.rows.some((r) => r.type === "probe" && r.last5m.succeeded >= 4),
      "and counted in the table",
    );
  });

  test("a fresh database's first tick reaches the present (nothing to catch up on is skipped)", async () => {
    await pool().query(`DELETE FROM job_attempts WHERE finished_at < now() - interval '1 hour'`);
    await pool().query(`UPDATE stats_rollup SET rolled_to = now() - interval '8 days' WHERE id = 1`);
    const tick = await rollupStats();
    assert.equal(tick.caughtUp, true);
  });

  test("members are refused; bad filters name the field", async () => {
    await assert.rejects(getOverview(fx.p.ada, {}), isCode("forbidden"));
    await assert.rejects(getOverview(fx.p.oscar, { tenant: "globex" }), isCode("not_found"));
    await assert.rejects(getOverview(fx.p.oscar, { queue: "nope" }), (e: unknown) => {
      assert.ok(e instanceof AppError && e.code === "invalid_input");
      assert.equal(e.fields?.[0]?.path, "queue");
      return true;
    });
  });
});
