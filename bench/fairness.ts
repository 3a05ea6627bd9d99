/**
 * npm run bench:fairness [-- --cases probe,exports,queued --jobs 10000 --sleep-ms 50 --interactive 20
 *                           --backlog 100000 --runnable 3000 --real-exports 300 --queued 1000000
 *                           --queued-sleep-ms 2000 --b-exports 10]
 *
 * `probe` (1 and 2 below) runs probe jobs on worker pools of its own; `exports` and `queued`
 * (bench/fairness-real.ts) run through the product as `npm start` runs it, with real exports.
 *
 * 1. Fairness. Tenant A floods `--jobs` bulk jobs (each `--sleep-ms` of work);
 *    tenant B submits `--interactive` interactive jobs spread over the run.
 *    With admission on (a bulk pool of 8 and an interactive pool of 4, bulk cap
 *    16 per tenant) and off (jobs straight to graphile-worker in arrival order,
 *    one shared pool of 12: what graphile-worker alone does), in the same run. Reports B's start latency
 *    p50/p95 and A's throughput, and samples running jobs and slots every
 *    50 ms to show no cap was exceeded.
 * 2. Paused backlog. Throughput of `--runnable` trivial jobs of tenant A with
 *    `--backlog` jobs of a paused tenant C waiting in the same queue, against
 *    none, in the order none, with, with, none.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import type { ChildProcess } from "node:child_process";
import { pool } from "@/lib/db";
import { withScratchDatabase } from "../scripts/database";
import { percentile, q, startWorker, stopProcess, waitUntil } from "./harness";
import { printRealCases, realCases } from "./fairness-real";
import "@/lib/workloads";

type Tenants = { a: string; b: string; c: string };

const BULK_POOL = 8;
const BULK_CAP = 16;
const INTERACTIVE_POOL = 4;
const INTERACTIVE_CAP = 4;

async function createTenants(): Promise<Tenants> {
  const rows = await q<{ slug: string; id: string }>(
    `INSERT INTO tenants (id, slug, name) VALUES (gen_random_uuid(), 'a', 'Tenant A'), (gen_random_uuid(), 'b', 'Tenant B'),
       (gen_random_uuid(), 'c', 'Tenant C') RETURNING slug, id`,
  );
  const id = (slug: string) => rows.find((r) => r.slug === slug)!.id;
  return { a: id("a"), b: id("b"), c: id("c") };
}

/**
 * Inserts `n` probe jobs in one statement: through admission (its trigger runs
 * for each), or with admission off, straight to graphile-worker in arrival
 * order — what graphile-worker alone does.
 */
async function flood(tenantId: string, queue: string, n: number, sleepMs: number, direct = false): Promise<void> {
  await pool().query(
    `WITH inserted AS (
       INSERT INTO jobs (id, tenant_id, type, queue, status, input, input_hash, max_attempts, admitted_at, updated_at)
       SELECT gen_random_uuid(), $1, 'probe', $2, 'queued', json_build_object('sleepMs', $4::int), 'bench', 3,
              CASE WHEN $5::boolean THEN now() END, now()
       FROM generate_series(1, $3::int)
       RETURNING id, queue, type)
     SELECT count(conveyor_dispatch(id, queue, type)) FROM inserted WHERE $5::boolean`,
    [tenantId, queue, n, sleepMs, direct],
  );
}

const done = async (tenantId: string) =>
  (
    await q<{ n: number }>(`SELECT count(*)::int AS n FROM jobs WHERE tenant_id = $1 AND status = 'succeeded'`, [
      tenantId,
    ])
  )[0]!.n;

/**
 * A queue's default tenant cap, written where every worker reads it: caps live in the database
 * (a worker's QUEUE_* environment only seeds a new one), as a platform admin sets them.
 */
async function setDefaultCap(queue: string, cap: number): Promise<void> {
  await pool().query(`UPDATE queues SET tenant_cap = $2, configured_at = now(), updated_at = now() WHERE name = $1`, [
    queue,
    cap,
  ]);
}

async function startFleet(url: string, pools: { queues: string; concurrency: number }[], env: Record<string, string>) {
  return Promise.all(
    pools.map((p) =>
      startWorker(["--queues", p.queues, "--concurrency", String(p.concurrency)], { DATABASE_URL: url, ...env }),
    ),
  );
}

type FairnessResult = {
  bLatency: number[];
  aRate: number;
  peak: { aBulk: number; bInteractive: number; total: number; aSlots: number; bSlots: number };
};

async function fairnessRun(
  url: string,
  t: Tenants,
  mode: "on" | "off",
  o: { jobs: number; sleepMs: number; interactive: number },
): Promise<FairnessResult> {
  await pool().query(`DELETE FROM jobs`);
  await pool().query(`DELETE FROM graphile_worker._private_jobs`);
  // The default cap (8) suits npm start's bulk pool of 4: about twice the
  // pool, so a finished job's slot is refilled from graphile at once.
  if (mode === "on") await setDefaultCap("bulk", BULK_CAP);
  const fleet: ChildProcess[] =
    mode === "on"
      ? await startFleet(
          url,
          [
            { queues: "bulk", concurrency: BULK_POOL },
            { queues: "interactive", concurrency: INTERACTIVE_POOL },
          ],
          {},
        )
      : // Off: every job goes straight to graphile-worker, one pool runs both queues.
        await startFleet(url, [{ queues: "interactive,bulk", concurrency: BULK_POOL + INTERACTIVE_POOL }], {});
  const peak = { aBulk: 0, bInteractive: 0, total: 0, aSlots: 0, bSlots: 0 };
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      // Running jobs, and slots (admitted or running: what a cap bounds).
      const [r] = await q<{ a: number; b: number; total: number; aSlots: number; bSlots: number }>(
        `SELECT count(*) FILTER (WHERE status = 'running' AND tenant_id = $1 AND queue = 'bulk')::int AS a,
                count(*) FILTER (WHERE status = 'running' AND tenant_id = $2 AND queue = 'interactive')::int AS b,
                count(*) FILTER (WHERE status = 'running')::int AS total,
                count(*) FILTER (WHERE admitted_at IS NOT NULL AND tenant_id = $1 AND queue = 'bulk')::int AS "aSlots",
                count(*) FILTER (WHERE admitted_at IS NOT NULL AND tenant_id = $2 AND queue = 'interactive')::int AS "bSlots"
         FROM jobs WHERE status IN ('queued', 'retrying', 'running')`,
        [t.a, t.b],
      );
      peak.aBulk = Math.max(peak.aBulk, r!.a);
      peak.bInteractive = Math.max(peak.bInteractive, r!.b);
      peak.total = Math.max(peak.total, r!.total);
      peak.aSlots = Math.max(peak.aSlots, r!.aSlots);
      peak.bSlots = Math.max(peak.bSlots, r!.bSlots);
      await sleep(50);
    }
  })();
  try {
    await flood(t.a, "bulk", o.jobs, o.sleepMs, mode === "off");
    // B's jobs spread over the time A's flood takes on the bulk pool.
    const spreadMs = (o.jobs * o.sleepMs) / BULK_POOL;
    for (let i = 0; i < o.interactive; i++) {
      await sleep(spreadMs / o.interactive);
      await flood(t.b, "interactive", 1, o.sleepMs, mode === "off");
    }
    await waitUntil(async () => (await done(t.a)) === o.jobs && (await done(t.b)) === o.interactive);
  } finally {
    sampling = false;
    await sampler;
    await Promise.all(fleet.map(stopProcess));
  }
  const bLatency = (
    await q<{ ms: number }>(
      `SELECT (extract(epoch FROM started_at - created_at) * 1000)::float8 AS ms FROM jobs WHERE tenant_id = $1`,
      [t.b],
    )
  ).map((r) => r.ms);
  const [span] = await q<{ s: number }>(
    `SELECT extract(epoch FROM max(finished_at) - min(started_at))::float8 AS s FROM jobs WHERE tenant_id = $1`,
    [t.a],
  );
  return { bLatency, aRate: o.jobs / span!.s, peak };
}

async function backlogRun(url: string, t: Tenants, runnable: number): Promise<number> {
  await pool().query(`DELETE FROM jobs WHERE tenant_id = $1`, [t.a]);
  await setDefaultCap("bulk", BULK_CAP);
  const fleet = await startFleet(url, [{ queues: "bulk", concurrency: BULK_POOL }], {});
  try {
    const before = await done(t.a);
    const t0 = performance.now();
    await flood(t.a, "bulk", runnable, 0);
    await waitUntil(async () => (await done(t.a)) === before + runnable);
    return runnable / ((performance.now() - t0) / 1000);
  } finally {
    await Promise.all(fleet.map(stopProcess));
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      jobs: { type: "string", default: "10000" },
      "sleep-ms": { type: "string", default: "50" },
      interactive: { type: "string", default: "20" },
      backlog: { type: "string", default: "100000" },
      runnable: { type: "string", default: "3000" },
      cases: { type: "string", default: "probe,exports,queued" },
      "real-exports": { type: "string", default: "300" },
      queued: { type: "string", default: "1000000" },
      "queued-sleep-ms": { type: "string", default: "2000" },
      "b-exports": { type: "string", default: "10" },
    },
  });
  const cases = new Set(values.cases.split(","));
  if (cases.has("exports") || cases.has("queued")) {
    const real = await realCases({
      exports: cases.has("exports") ? Number(values["real-exports"]) : 0,
      queued: cases.has("queued") ? Number(values.queued) : 0,
      queuedSleepMs: Number(values["queued-sleep-ms"]),
      bExports: Number(values["b-exports"]),
    });
    console.log("\nFairness with real work: B's small exports beside A's backlog (npm start, default settings)");
    printRealCases(real);
  }
  if (!cases.has("probe")) return;
  const o = { jobs: Number(values.jobs), sleepMs: Number(values["sleep-ms"]), interactive: Number(values.interactive) };
  const backlog = Number(values.backlog);
  const runnable = Number(values.runnable);

  await withScratchDatabase("conveyor_fairness", async ({ url }) => {
    const t = await createTenants();
    const fmt = (ms: number) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${Math.round(ms)} ms`);

    console.log(
      `\nFairness: A floods ${o.jobs} bulk jobs of ${o.sleepMs} ms; B submits ${o.interactive} interactive jobs`,
    );
    const on = await fairnessRun(url, t, "on", o);
    const off = await fairnessRun(url, t, "off", o);
    console.log(
      "\n| admission | B start p50 | B start p95 | B start max | A jobs/s | peak running: A bulk / B interactive / all | peak slots (admitted + running): A bulk / B interactive |",
    );
    console.log("|---|---|---|---|---|---|---|");
    for (const [name, r] of [
      [`on (pools ${BULK_POOL} bulk + ${INTERACTIVE_POOL} interactive, caps ${BULK_CAP} / ${INTERACTIVE_CAP})`, on],
      [`off (straight to graphile-worker, one pool of ${BULK_POOL + INTERACTIVE_POOL})`, off],
    ] as const) {
      console.log(
        `| ${name} | ${fmt(percentile(r.bLatency, 50))} | ${fmt(percentile(r.bLatency, 95))} | ${fmt(Math.max(...r.bLatency))} | ${Math.round(r.aRate)} | ${r.peak.aBulk} / ${r.peak.bInteractive} / ${r.peak.total} | ${r.peak.aSlots} / ${r.peak.bSlots} |`,
      );
    }
    const p95 = percentile(on.bLatency, 95);
    console.log(
      `\nB's p95 start latency with admission: ${fmt(p95)} (goal ≤ 2 s: ${p95 <= 2000 ? "met" : "NOT met"}); ` +
        `${(percentile(off.bLatency, 95) / p95).toFixed(0)}× lower than without.`,
    );
    const share = BULK_POOL / (BULK_POOL + INTERACTIVE_POOL);
    console.log(
      `A's throughput with admission: ${(on.aRate / off.aRate).toFixed(2)}× of without (by design A gets the bulk pool: ${BULK_POOL} of ${BULK_POOL + INTERACTIVE_POOL} slots, ${share.toFixed(2)}×).`,
    );
    const capsHeld = on.peak.aSlots <= BULK_CAP && on.peak.bSlots <= INTERACTIVE_CAP;
    console.log(
      `Caps (A bulk ≤ ${BULK_CAP}, B interactive ≤ ${INTERACTIVE_CAP} admitted + running) ${capsHeld ? "never exceeded" : "EXCEEDED"} in 50 ms samples.`,
    );

    console.log(`\nPaused backlog: ${runnable} trivial jobs of A, with and without ${backlog} paused jobs of C`);
    // A B B A, with the table vacuumed after each change, so both sides see it in a steady state.
    const none1 = await backlogRun(url, t, runnable);
    await pool().query(`INSERT INTO queue_pauses (id, tenant_id, reason) VALUES (gen_random_uuid(), $1, 'bench')`, [
      t.c,
    ]);
    await flood(t.c, "bulk", backlog, 0);
    await pool().query(`VACUUM ANALYZE jobs`);
    const with1 = await backlogRun(url, t, runnable);
    const with2 = await backlogRun(url, t, runnable);
    await pool().query(`DELETE FROM jobs WHERE tenant_id = $1`, [t.c]);
    await pool().query(`VACUUM ANALYZE jobs`);
    const none2 = await backlogRun(url, t, runnable);
    const noneRate = (none1 + none2) / 2;
    const withRate = (with1 + with2) / 2;
    console.log("\n| | jobs/s (run 1) | jobs/s (run 2) |");
    console.log("|---|---|---|");
    console.log(`| no backlog | ${Math.round(none1)} | ${Math.round(none2)} |`);
    console.log(`| ${backlog} paused jobs waiting | ${Math.round(with1)} | ${Math.round(with2)} |`);
    const ratio = withRate / noneRate;
    console.log(`\nratio: ${ratio.toFixed(2)}× (goal ≥ 0.9×: ${ratio >= 0.9 ? "met" : "NOT met"})`);
    const graphileRows = await q<{ n: number }>(`SELECT count(*)::int AS n FROM graphile_worker.jobs`);
    console.log(`graphile-worker's job table holds ${graphileRows[0]!.n} rows: the backlog never entered it.`);
  });
}

main().catch((err: Error) => {
  console.error(err.stack ?? err.message);
  process.exit(1);
});
