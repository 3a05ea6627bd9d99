import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createPause } from "@/lib/admission/pauses";
import { pool } from "@/lib/db";
import { getHealth, type HealthRowDto } from "@/lib/ops/health";
import { renderMetrics } from "@/lib/ops/metrics";
import { rollupStats } from "@/lib/ops/stats";
import { useTestDatabase } from "../helpers/db";
import { isCode } from "../helpers/fixtures";

const fx = useTestDatabase();

async function rollUp() {
  let ticks = 0;
  while (!(await rollupStats()).caughtUp) assert.ok(ticks++ < 10, "catches up in a few ticks");
}

/** A job row in a given state, due `dueSecsAgo` seconds ago (negative: in the future). */
async function job(
  tenantId: string,
  queue: string,
  status: string,
  dueSecsAgo: number,
  extra: { leaseOwner?: string; admitted?: boolean; attempts?: number } = {},
): Promise<string> {
  const { rows } = await pool().query<{ id: string }>(
    `INSERT INTO jobs (id, tenant_id, type, queue, status, input, input_hash, run_at, attempts, lease_owner, admitted_at,
                       started_at, finished_at, updated_at)
     VALUES (gen_random_uuid(), $1, 'probe', $2, $3::job_status, '{}', 'h', now() - make_interval(secs => $4::float8),
             $5, $6, CASE WHEN $7 THEN now() END, CASE WHEN $3 = 'running' THEN now() END,
             CASE WHEN $3 IN ('failed', 'succeeded') THEN now() END, now())
     RETURNING id`,
    [tenantId, queue, status, dueSecsAgo, extra.attempts ?? 0, extra.leaseOwner ?? null, extra.admitted ?? false],
  );
  return rows[0]!.id;
}

/** An attempt that started `startedSecsAgo` seconds ago, `latencySecs` after its job became due. */
async function attempt(
  jobId: string,
  n: number,
  startedSecsAgo: number,
  latencySecs: number,
  outcome: string,
  finishedSecsAgo: number | null = null,
) {
  await pool().query(
    `INSERT INTO job_attempts (job_id, attempt, worker_id, fencing_token, started_at, ready_at, finished_at, outcome, duration_ms)
     VALUES ($1, $2::int, 'w-test', $2::int, now() - make_interval(secs => $3::float8),
             now() - make_interval(secs => $3::float8 + $4::float8),
             now() - make_interval(secs => $5::float8), $6, CASE WHEN $5::float8 IS NULL THEN NULL ELSE 20 END)`,
    [jobId, n, startedSecsAgo, latencySecs, finishedSecsAgo, outcome],
  );
}

const find = (rows: HealthRowDto[], queue: string, tenant?: string) =>
  rows.find((r) => r.queue === queue && (tenant ? r.tenant?.slug === tenant : r.tenant === null));

/** A sample's value in the exposition text, or null when absent. */
function sample(body: string, name: string, labels: string): number | null {
  const line = body.split("\n").find((l) => l.startsWith(`${name}{${labels}} `));
  return line ? Number(line.slice(line.lastIndexOf(" ") + 1)) : null;
}

describe("health signals per queue and tenant", () => {
  test("oldest ready age, start latency p95, utilisation, retry rate and dead-letter growth, judged and exported", async () => {
    await pool().query(
      `INSERT INTO queues (name, tenant_cap, max_admitted) VALUES ('bulk', 8, 64), ('interactive', 4, 32)
       ON CONFLICT (name) DO UPDATE SET tenant_cap = excluded.tenant_cap`,
    );
    await pool().query(`DELETE FROM jobs`);
    // Ready: Acme's bulk job due two minutes ago, Globex's 30 s ago; Globex's interactive one 20 s ago.
    await job(fx.p.acmeId, "bulk", "queued", 120);
    await job(fx.p.globexId, "bulk", "queued", 30);
    await job(fx.p.globexId, "interactive", "queued", 20);
    // Not ready: a retry whose backoff has not ended, and Acme's interactive job held by a pause.
    await job(fx.p.acmeId, "bulk", "retrying", -600, { attempts: 1 });
    await job(fx.p.acmeId, "interactive", "queued", 900);
    await createPause(fx.p.oscar, { queue: "interactive", reason: "health test" });

    // One live worker serving bulk with 4 slots, 3 of them busy with Acme's jobs; Acme's bulk cap is 4.
    await pool().query(
      `INSERT INTO workers (id, host, pid, version, queues, concurrency, state) VALUES ('w-health', 'h', 1, 't', '{bulk}', 4, 'running')`,
    );
    await pool().query(`INSERT INTO tenant_queue_limits (tenant_id, queue, max_running) VALUES ($1, 'bulk', 4)`, [
      fx.p.acmeId,
    ]);
    const running: string[] = [];
    for (let i = 0; i < 3; i++)
      running.push(
        await job(fx.p.acmeId, "bulk", "running", 5, { leaseOwner: "w-health", admitted: true, attempts: 1 }),
      );

    // Started in the last minute: nine first attempts that waited 1 s, one retry that waited 200 s.
    for (let i = 0; i < 9; i++) {
      const id = await job(fx.p.acmeId, "bulk", "succeeded", 70, { attempts: 1 });
      await attempt(id, 1, 60, 1, "succeeded", 59);
    }
    const retried = await job(fx.p.acmeId, "bulk", "succeeded", 300, { attempts: 2 });
    await attempt(retried, 2, 60, 200, "succeeded", 59);
    // A dead letter ten minutes ago, and one from two hours ago (outside the hour).
    const dead = await job(fx.p.acmeId, "bulk", "failed", 700, { attempts: 1 });
    await attempt(dead, 1, 605, 1, "failed", 600);
    const oldDead = await job(fx.p.acmeId, "bulk", "failed", 7300, { attempts: 1 });
    await attempt(oldDead, 1, 7205, 1, "failed", 7200);

    await rollUp();
    const h = await getHealth(fx.p.root, {});

    const bulk = find(h.queues, "bulk")!;
    assert.ok(bulk, "a fleet row for bulk");
    assert.ok(
      Math.abs(bulk.signals.oldestReadyAge.value! - 120) < 5,
      `oldest ready ≈ 120 s: ${bulk.signals.oldestReadyAge.value}`,
    );
    assert.equal(bulk.signals.oldestReadyAge.state, "ok", "bulk warns at 300 s");
    // p95 of ten starts falls in the one that waited 200 s: between the 60 s and 300 s bucket bounds.
    const p95 = bulk.signals.startLatencyP95.value!;
    assert.ok(p95 > 60 && p95 <= 300, `p95 start latency in the 60–300 s bucket: ${p95}`);
    assert.equal(bulk.signals.startLatencyP95.state, "warning");
    assert.equal(bulk.started, 10);
    assert.equal(bulk.signals.retryRate.value, 0.1);
    assert.equal(bulk.signals.retryRate.state, "warning");
    assert.equal(bulk.signals.utilisation.value, 0.75);
    assert.deepEqual([bulk.busy, bulk.capacity, bulk.liveWorkers], [3, 4, 1]);
    assert.equal(bulk.signals.utilisation.state, "ok");
    assert.equal(bulk.signals.deadLettersPerHour.value, 1, "only the dead letter of the last hour");
    assert.equal(bulk.signals.deadLettersPerHour.state, "warning");
    assert.equal(bulk.state, "warning");

    const interactive = find(h.queues, "interactive")!;
    assert.ok(
      Math.abs(interactive.signals.oldestReadyAge.value! - 20) < 5,
      "Acme's paused job is not ready: Globex's is the oldest",
    );
    assert.equal(interactive.signals.oldestReadyAge.state, "warning", "interactive warns at 10 s");
    assert.equal(interactive.liveWorkers, 0);
    assert.equal(interactive.signals.utilisation.value, null);
    assert.equal(interactive.state, "behind", "no live worker serves it");

    // Per tenant.
    const acmeBulk = find(h.tenants, "bulk", "acme")!;
    assert.ok(Math.abs(acmeBulk.signals.oldestReadyAge.value! - 120) < 5);
    // Its queued job was admitted on insert (under the cap): three running and one admitted fill the cap.
    assert.deepEqual([acmeBulk.busy, acmeBulk.capacity], [4, 4], "admitted or running over Acme's cap");
    assert.equal(acmeBulk.signals.utilisation.state, "behind");
    assert.equal(acmeBulk.signals.retryRate.value, 0.1);
    const globexBulk = find(h.tenants, "bulk", "globex")!;
    assert.ok(Math.abs(globexBulk.signals.oldestReadyAge.value! - 30) < 5);
    assert.equal(globexBulk.started, 0);
    assert.equal(globexBulk.signals.startLatencyP95.value, null, "no starts: nothing measured");
    assert.equal(globexBulk.signals.deadLettersPerHour.value, 0);

    // An operator sees only their own tenant, every queue, and no fleet rows.
    const own = await getHealth(fx.p.oscar, {});
    assert.deepEqual(own.queues, []);
    assert.ok(own.tenants.length >= 3 && own.tenants.every((r) => r.tenant?.slug === "acme"));
    assert.deepEqual(
      own.tenants.map((r) => r.queue),
      ["bulk", "interactive", "webhooks"],
    );
    assert.equal(find(own.tenants, "interactive", "acme")!.signals.oldestReadyAge.value, 0, "paused: not ready");
    await assert.rejects(getHealth(fx.p.oscar, { tenant: "globex" }), isCode("not_found"));
    await assert.rejects(getHealth(fx.p.ada, {}), isCode("forbidden"));
    await assert.rejects(getHealth(fx.p.root, { queue: "bulk" }), isCode("invalid_input"));
    const globexOnly = await getHealth(fx.p.root, { tenant: "globex" });
    assert.ok(globexOnly.tenants.every((r) => r.tenant?.slug === "globex"));

    // The same numbers as Prometheus gauges, with the thresholds the alert rules compare against.
    const { body } = await renderMetrics();
    const age = sample(body, "conveyor_queue_oldest_ready_age_seconds", 'queue="bulk"');
    assert.ok(age !== null && Math.abs(age - 120) < 5, `conveyor_queue_oldest_ready_age_seconds: ${age}`);
    const tenantAge = sample(body, "conveyor_tenant_oldest_ready_age_seconds", 'queue="bulk",tenant="globex"');
    assert.ok(tenantAge !== null && Math.abs(tenantAge - 30) < 5);
    const p95m = sample(body, "conveyor_queue_start_latency_p95_seconds", 'queue="bulk"');
    assert.ok(p95m !== null && p95m > 60 && p95m <= 300);
    assert.equal(sample(body, "conveyor_queue_utilisation_ratio", 'queue="bulk"'), 0.75);
    assert.equal(sample(body, "conveyor_queue_utilisation_ratio", 'queue="interactive"'), null, "no slots: no sample");
    assert.equal(sample(body, "conveyor_tenant_utilisation_ratio", 'queue="bulk",tenant="acme"'), 1);
    assert.equal(sample(body, "conveyor_queue_retry_ratio", 'queue="bulk"'), 0.1);
    assert.equal(sample(body, "conveyor_queue_dead_letters_last_hour", 'queue="bulk"'), 1);
    assert.equal(sample(body, "conveyor_queue_workers_live", 'queue="bulk"'), 1);
    assert.equal(sample(body, "conveyor_queue_workers_live", 'queue="interactive"'), 0);
    assert.equal(
      sample(
        body,
        "conveyor_queue_health_threshold",
        'queue="interactive",signal="oldest_ready_age_seconds",level="behind"',
      ),
      60,
    );
    assert.equal(sample(body, "conveyor_attempts_started_total", 'queue="bulk",tenant="acme"'), 12);
    assert.equal(sample(body, "conveyor_dead_letters_created_total", 'queue="bulk",tenant="acme"'), 2);
    // Paused jobs still count as waiting in the older gauge.
    const waiting = sample(body, "conveyor_oldest_waiting_seconds", 'queue="interactive",tenant="acme"');
    assert.ok(waiting !== null && waiting > 890);
  });

  test("counters never go backwards when history is pruned or minute rows age out", async () => {
    await pool().query(`DELETE FROM jobs`);
    for (let i = 0; i < 4; i++) {
      const id = await job(fx.p.globexId, "bulk", "succeeded", 60, { attempts: i < 3 ? 1 : 2 });
      await attempt(id, i < 3 ? 1 : 2, 50, 1, "succeeded", 40);
    }
    const dead = await job(fx.p.globexId, "bulk", "failed", 60, { attempts: 1 });
    await attempt(dead, 1, 50, 1, "lost", 45);
    await rollUp();

    const read = async () => {
      const { body } = await renderMetrics();
      return {
        succeeded: sample(body, "conveyor_attempts_total", 'type="probe",outcome="succeeded"') ?? 0,
        lost: sample(body, "conveyor_attempts_total", 'type="probe",outcome="lost"') ?? 0,
        retries: sample(body, "conveyor_retries_total", 'type="probe"') ?? 0,
        dead: sample(body, "conveyor_dead_letters_created_total", 'queue="bulk",tenant="globex"') ?? 0,
        started: sample(body, "conveyor_attempts_started_total", 'queue="bulk",tenant="globex"') ?? 0,
        count: sample(body, "conveyor_attempt_duration_seconds_count", 'type="probe"') ?? 0,
      };
    };
    const before = await read();
    assert.ok(before.succeeded >= 4 && before.lost >= 1 && before.retries >= 1, JSON.stringify(before));
    assert.deepEqual([before.dead, before.started], [1, 5]);

    // Twenty minutes pass (everything the rollup knows moves back in time together): the next
    // ticks find those minutes final and fold them into the running totals.
    const shift = "interval '20 minutes'";
    await pool().query(
      `UPDATE job_attempts SET started_at = started_at - ${shift}, finished_at = finished_at - ${shift},
                               ready_at = ready_at - ${shift}`,
    );
    await pool().query(`UPDATE job_stats_minute SET bucket = bucket - ${shift}`);
    await pool().query(`UPDATE stats_rollup SET rolled_to = rolled_to - ${shift}, totals_to = totals_to - ${shift}`);
    await rollUp();
    await rollUp();
    const { rows } = await pool().query<{ n: string }>(
      `SELECT coalesce(sum(started), 0) AS n FROM job_stats_total WHERE tenant_id = $1`,
      [fx.p.globexId],
    );
    assert.equal(Number(rows[0]!.n), 5, "the final minutes were folded into the totals");
    assert.deepEqual(await read(), before, "folding changes no counter");

    // Retention prunes every job with its attempts; the minute rows age out.
    await pool().query(`DELETE FROM jobs`);
    await pool().query(`DELETE FROM job_stats_minute WHERE bucket < now() - interval '10 minutes'`);
    await rollUp();
    assert.deepEqual(await read(), before, "the counters kept their values");
  });
});
