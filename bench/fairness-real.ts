/**
 * bench:fairness's two cases at the seeds' scale (issue 34), through the product as `npm start`
 * runs it (a scratch database, default settings but rate limits and quotas off, as bench:api):
 *
 *   exports: tenant A (Acme, a million events) requests `--real-exports` exports of its events
 *            (JSON Lines, gzip: seconds each) through the API; then tenant B (Globex) requests
 *            `--b-exports` small exports, one a second. B's start lag = its first attempt's start −
 *            its creation (server timestamps).
 *   queued:  tenant A has `--queued` jobs waiting (probe jobs of `--queued-sleep-ms`, inserted in
 *            chunks of 10,000 — the gradual bulk insert the seeds advise — in the bulk queue, its
 *            pool running them meanwhile); B requests its small exports as above.
 *
 * In both, B's member lists its jobs (`GET /api/v1/jobs?limit=20`) every 250 ms meanwhile: p50/p95,
 * beside the same list with nothing else running (the baseline, same process, same run).
 */
import { setTimeout as sleep } from "node:timers/promises";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { createApiTokenForEmail } from "@/lib/auth/tokens";
import { pool } from "@/lib/db";
import { seed } from "../prisma/seed";
import { withScratchDatabase } from "../scripts/database";
import { percentile, q, startProduct, stopProduct } from "./harness";

const OFF_LIMITS = {
  RATE_LIMIT_READS_PER_MINUTE: "0",
  RATE_LIMIT_WRITES_PER_MINUTE: "0",
  QUOTA_JOBS_PER_USER: "10000000",
  QUOTA_JOBS_PER_TENANT: "10000000",
};

type Client = { base: string; token: string };

async function postExport(c: Client, body: Record<string, unknown>): Promise<string> {
  const res = await fetch(`${c.base}/api/v1/exports`, {
    method: "POST",
    headers: { Authorization: `Bearer ${c.token}`, "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  if (res.status !== 202) throw new Error(`POST /api/v1/exports answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { id: string }).id;
}

/** B's list, timed from the client: ms per request. */
async function listOnce(c: Client): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(`${c.base}/api/v1/jobs?limit=20`, { headers: { Authorization: `Bearer ${c.token}` } });
  if (res.status !== 200) throw new Error(`GET /api/v1/jobs answered ${res.status}`);
  await res.arrayBuffer();
  return performance.now() - t0;
}

/** Lists every 250 ms until `stop` resolves. */
async function listing(c: Client, stop: { done: boolean }): Promise<number[]> {
  const ms: number[] = [];
  while (!stop.done) {
    ms.push(await listOnce(c));
    await sleep(250);
  }
  return ms;
}

/** B's small exports, one a second; their start lags (server timestamps) once all started. */
async function bExports(b: Client, n: number): Promise<number[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    ids.push(await postExport(b, { dataset: "customers", format: "csv", compression: "none" }));
    await sleep(1_000);
  }
  for (;;) {
    const rows = await q<{ ms: number | null; admitted: number | null }>(
      `SELECT (extract(epoch FROM (SELECT min(started_at) FROM job_attempts a WHERE a.job_id = j.id) - j.created_at) * 1000)::float8 AS ms,
              (extract(epoch FROM j.admitted_at - j.created_at) * 1000)::float8 AS admitted
         FROM jobs j WHERE j.id = ANY($1::uuid[])`,
      [ids],
    );
    if (rows.every((r) => r.ms !== null)) {
      if (process.env.BENCH_DEBUG) console.log(JSON.stringify(rows));
      return rows.map((r) => r.ms!);
    }
    await sleep(200);
  }
}

/** B's exports and list while A's backlog waits: B's start lags, its list times, and A's jobs waiting then. */
async function bBeside(b: Client, acme: string, n: number, stop: { done: boolean }) {
  const list = listing(b, stop);
  const bStart = await bExports(b, n);
  const [w] = await q<{ n: number }>(
    `SELECT count(*)::int AS n FROM jobs WHERE tenant_id = $1 AND status IN ('queued', 'retrying')`,
    [acme],
  );
  stop.done = true;
  return { bStart, list: await list, waiting: w!.n };
}

export type RealCaseResult = {
  name: string;
  bStart: number[];
  list: number[];
  listAlone: number[];
  aWaiting: number;
  aRunningPeak: number;
};

/** Peak of A's running jobs in the queue, sampled every 100 ms until stopped. */
async function sampleRunning(tenantId: string, queue: string, stop: { done: boolean }): Promise<number> {
  let peak = 0;
  while (!stop.done) {
    const [r] = await q<{ n: number }>(
      `SELECT count(*)::int AS n FROM jobs WHERE tenant_id = $1 AND queue = $2 AND status = 'running'`,
      [tenantId, queue],
    );
    peak = Math.max(peak, r!.n);
    await sleep(100);
  }
  return peak;
}

export async function realCases(o: {
  exports: number;
  queued: number;
  queuedSleepMs: number;
  bExports: number;
}): Promise<RealCaseResult[]> {
  const dir = await mkdtemp(path.join(tmpdir(), "conveyor-bench-fairness-"));
  const results: RealCaseResult[] = [];
  try {
    await withScratchDatabase("conveyor_fairness_real", async ({ url }) => {
      await seed(1); // Acme: a million events
      const ids = await q<{ slug: string; id: string }>(`SELECT slug, id FROM tenants`);
      const acme = ids.find((t) => t.slug === "acme")!.id;
      const { base, child } = await startProduct(url, { CONVEYOR_DATA_DIR: path.join(dir, "data"), ...OFF_LIMITS });
      try {
        const a: Client = { base, token: await createApiTokenForEmail("ada@acme.test", "bench:fairness") };
        const b: Client = { base, token: await createApiTokenForEmail("gus@globex.test", "bench:fairness") };
        // Baseline: B's list with nothing else running.
        const listAlone: number[] = [];
        for (let i = 0; i < 40; i++) {
          listAlone.push(await listOnce(b));
          await sleep(50);
        }

        if (o.exports > 0) {
          const stop = { done: false };
          const peak = sampleRunning(acme, "interactive", stop);
          for (let i = 0; i < o.exports; i += 10) {
            await Promise.all(
              Array.from({ length: Math.min(10, o.exports - i) }, () =>
                postExport(a, { dataset: "events", format: "jsonl", compression: "gzip" }),
              ),
            );
          }
          await sleep(3_000); // A's exports are running
          const { bStart, list, waiting } = await bBeside(b, acme, o.bExports, stop);
          results.push({
            name: `${o.exports} exports of 1M events (JSONL+gzip) by A`,
            bStart,
            list,
            listAlone,
            aWaiting: waiting,
            aRunningPeak: await peak,
          });
          // A's rest is cancelled, so the next case starts clean.
          await pool().query(
            `UPDATE jobs SET cancel_requested_at = now() WHERE tenant_id = $1 AND status IN ('queued', 'retrying', 'running')`,
            [acme],
          );
          await pool().query(
            `UPDATE jobs SET status = 'cancelled', finished_at = now(), admitted_at = NULL
              WHERE tenant_id = $1 AND status IN ('queued', 'retrying')`,
            [acme],
          );
          while ((await q<{ n: number }>(`SELECT count(*)::int AS n FROM jobs WHERE status = 'running'`))[0]!.n > 0) {
            await sleep(500);
          }
        }

        if (o.queued > 0) {
          const stop = { done: false };
          const peak = sampleRunning(acme, "bulk", stop);
          const t0 = performance.now();
          // A gradual bulk insert: 10,000 a statement, each its own transaction, admitted by the
          // admitter (not inline: a long statement would hold the admission lock).
          for (let i = 0; i < o.queued; i += 10_000) {
            await pool().query(
              `BEGIN; SET LOCAL conveyor.admit_inline = 'off';
               INSERT INTO jobs (id, tenant_id, type, queue, status, input, input_hash, max_attempts, updated_at)
               SELECT gen_random_uuid(), '${acme}', 'probe', 'bulk', 'queued', '{"sleepMs": ${o.queuedSleepMs}}', 'bench', 3, now()
                 FROM generate_series(1, ${Math.min(10_000, o.queued - i)});
               COMMIT;`,
            );
          }
          const insertS = (performance.now() - t0) / 1000;
          await pool().query(`VACUUM ANALYZE jobs`);
          const { bStart, list, waiting } = await bBeside(b, acme, o.bExports, stop);
          results.push({
            name: `${o.queued.toLocaleString("en")} queued jobs of ${o.queuedSleepMs} ms by A (inserted in ${insertS.toFixed(0)} s)`,
            bStart,
            list,
            listAlone,
            aWaiting: waiting,
            aRunningPeak: await peak,
          });
        }
      } finally {
        await stopProduct(child);
      }
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return results;
}

export function printRealCases(results: RealCaseResult[]): void {
  const fmt = (ms: number) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${Math.round(ms)} ms`);
  console.log(
    "\n| A's backlog | B start p50 | B start p95 | B start max | A waiting then | A running peak | B list p50 / p95 | B list alone p50 / p95 | list ratio p95 |",
  );
  console.log("|---|---|---|---|---|---|---|---|---|");
  for (const r of results) {
    const p95 = percentile(r.bStart, 95);
    console.log(
      `| ${r.name} | ${fmt(percentile(r.bStart, 50))} | ${fmt(p95)} | ${fmt(Math.max(...r.bStart))} | ${r.aWaiting} | ${r.aRunningPeak} | ${fmt(percentile(r.list, 50))} / ${fmt(percentile(r.list, 95))} | ${fmt(percentile(r.listAlone, 50))} / ${fmt(percentile(r.listAlone, 95))} | ${(percentile(r.list, 95) / percentile(r.listAlone, 95)).toFixed(2)}× |`,
    );
    console.log(
      `  goal: B's export starts within 1 s p95: ${p95 <= 1000 ? "met" : "NOT met"}; B's list ≤ 100 ms p95: ${percentile(r.list, 95) <= 100 ? "met" : "NOT met"}`,
    );
  }
}
