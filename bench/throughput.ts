/**
 * npm run bench:throughput [-- --jobs 2000 --concurrency 8 --latency-jobs 200 --async-commit]
 * Trivial jobs through Conveyor's full bookkeeping (the `probe` task with no
 * sleep: enqueue with admission, claim with lease and token, attempt row,
 * heartbeat timer, success write, NOTIFY) against bare graphile-worker running
 * a no-op, on the same database, with the same concurrency and one worker
 * process each, in the same run. Prints jobs/s and the ratio, and add→start
 * latency p50/p99 of each measured on an idle worker (one job every 20 ms).
 */
import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { pool } from "@/lib/db";
import { enqueueJob } from "@/lib/jobs/enqueue";
import { seed } from "../prisma/seed";
import { withScratchDatabase } from "../scripts/database";
import { percentile, q, startProcess, stopProcess, waitUntil } from "./harness";
import "@/lib/workloads";

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      jobs: { type: "string", default: "2000" },
      concurrency: { type: "string", default: "8" },
      "latency-jobs": { type: "string", default: "200" },
      "async-commit": { type: "boolean", default: false },
    },
  });
  const jobs = Number(values.jobs);
  const concurrency = Number(values.concurrency);
  const latencyJobs = Number(values["latency-jobs"]);

  await withScratchDatabase("conveyor_bench", async ({ url, name, admin }) => {
    // Diagnostic: with --async-commit both sides skip the WAL flush at commit,
    // which shows how much of the gap is commit latency (Conveyor commits twice as often).
    if (values["async-commit"]) await admin.query(`ALTER DATABASE ${name} SET synchronous_commit = off`);
    const tenantId = (await seed(0.001)).get("acme")!;

    // ── Bare graphile-worker ────────────────────────────────────────────────
    const latencyFile = path.join(tmpdir(), `conveyor-bare-latency-${process.pid}.json`);
    const bare = await startProcess(
      ["bench/bare-worker.ts", latencyFile, String(concurrency)],
      { DATABASE_URL: url },
      /ready/,
    );
    const addBare = (phase: string) =>
      pool().query(
        `SELECT graphile_worker.add_job('bare_noop', json_build_object('addedAt', $1::bigint, 'phase', $2::text))`,
        [Date.now(), phase],
      );
    let t0 = performance.now();
    for (let i = 0; i < jobs; i += 50)
      await Promise.all(Array.from({ length: Math.min(50, jobs - i) }, () => addBare("throughput")));
    await waitUntil(
      async () => (await q<{ n: number }>(`SELECT count(*)::int AS n FROM graphile_worker.jobs`))[0]!.n === 0,
    );
    const bareSeconds = (performance.now() - t0) / 1000;
    for (let i = 0; i < latencyJobs; i++) {
      await addBare("latency");
      await sleep(20);
    }
    await waitUntil(
      async () => (await q<{ n: number }>(`SELECT count(*)::int AS n FROM graphile_worker.jobs`))[0]!.n === 0,
    );
    await stopProcess(bare);
    const bareLatency = JSON.parse(readFileSync(latencyFile, "utf8")) as number[];

    // ── Conveyor, full bookkeeping ───────────────────────────────────────────
    // Admission's cap at twice the pool, as docs/ARCHITECTURE.md advises: one
    // admitted job waits behind each running one, so a slot never waits for admission.
    // (In the database, where caps live: a worker's QUEUE_* only seed a new one.)
    await pool().query(
      `UPDATE queues SET tenant_cap = $1, configured_at = now(), updated_at = now() WHERE name = 'bulk'`,
      [2 * concurrency],
    );
    const ours = await startProcess(
      ["worker/index.ts", "--queues", "bulk", "--concurrency", String(concurrency)],
      { DATABASE_URL: url },
      /started/,
    );
    const succeeded = async () =>
      (await q<{ n: number }>(`SELECT count(*)::int AS n FROM jobs WHERE status = 'succeeded'`))[0]!.n;
    t0 = performance.now();
    for (let i = 0; i < jobs; i += 50) {
      await Promise.all(
        Array.from({ length: Math.min(50, jobs - i) }, () => enqueueJob({ tenantId, type: "probe", input: {} })),
      );
    }
    await waitUntil(async () => (await succeeded()) === jobs);
    const ourSeconds = (performance.now() - t0) / 1000;
    const latencyIds: string[] = [];
    for (let i = 0; i < latencyJobs; i++) {
      latencyIds.push((await enqueueJob({ tenantId, type: "probe", input: {} })).job.id);
      await sleep(20);
    }
    await waitUntil(async () => (await succeeded()) === jobs + latencyJobs);
    await stopProcess(ours);
    const ourLatency = (
      await q<{ ms: number }>(
        `SELECT (extract(epoch FROM a.started_at - j.created_at) * 1000)::float8 AS ms
         FROM jobs j JOIN job_attempts a ON a.job_id = j.id AND a.attempt = 1 WHERE j.id = ANY($1::uuid[])`,
        [latencyIds],
      )
    ).map((r) => r.ms);

    const bareRate = jobs / bareSeconds;
    const ourRate = jobs / ourSeconds;
    const fmt = (n: number) => n.toFixed(1);
    console.log(
      `\nThroughput benchmark: ${jobs} trivial jobs, 1 worker process, concurrency ${concurrency}; latency over ${latencyJobs} jobs added every 20 ms\n`,
    );
    console.log("| | jobs/s | add→start p50 | add→start p99 |");
    console.log("|---|---|---|---|");
    console.log(
      `| bare graphile-worker (no-op) | ${Math.round(bareRate)} | ${fmt(percentile(bareLatency, 50))} ms | ${fmt(percentile(bareLatency, 99))} ms |`,
    );
    console.log(
      `| Conveyor (probe, full bookkeeping) | ${Math.round(ourRate)} | ${fmt(percentile(ourLatency, 50))} ms | ${fmt(percentile(ourLatency, 99))} ms |`,
    );
    console.log(
      `\nratio: ${(ourRate / bareRate).toFixed(2)}× bare throughput (goal ≥ 0.5×); p50 ${fmt(percentile(ourLatency, 50) - percentile(bareLatency, 50))} ms over bare (goal ≤ 3 ms); p99 ${fmt(percentile(ourLatency, 99))} ms (goal ≤ 25 ms)`,
    );
  });
}

main().catch((err: Error) => {
  console.error(err.stack ?? err.message);
  process.exit(1);
});
