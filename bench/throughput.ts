/**
 * npm run bench:throughput [-- --sizes 1000,5000 --runs 3 --concurrency 8 --latency-jobs 200 --async-commit --profile]
 * Trivial jobs through Conveyor's full bookkeeping (the `probe` task with no
 * sleep: enqueue with admission, claim with lease and token, attempt row,
 * heartbeat timer, success write, NOTIFY) against bare graphile-worker running
 * a no-op, on the same database, with the same concurrency and one worker
 * process each, in the same run. Each run does every size on both sides (bare
 * first, then Conveyor, so both meet the same machine), then add→start latency
 * on an idle worker (one job every 20 ms). Prints a line per size and run, then
 * the medians per size: jobs/s, the ratio, transactions per job (from
 * pg_stat_database) and the latencies. `--sizes 1000,10000,50000` shows how the
 * cost grows with the burst; `--profile` also prints each side's top
 * statements when pg_stat_statements is loaded (a diagnostic, not the figure).
 */
import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import type pg from "pg";
import { pool } from "@/lib/db";
import { eventHub } from "@/lib/events/hub";
import { enqueueJob } from "@/lib/jobs/enqueue";
import { seed } from "../prisma/seed";
import { withScratchDatabase } from "../scripts/database";
import { percentile, q, startProcess, startWorker, stopProcess, waitUntil } from "./harness";
import "@/lib/workloads";

type Side = "bare" | "conveyor";
type SizeResult = { side: Side; run: number; jobs: number; rate: number; xactsPerJob: number; enqueueRate: number };
type LatencyResult = { side: Side; run: number; p50: number; p99: number };

const median = (xs: number[]) => percentile(xs, 50);

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      sizes: { type: "string", default: "1000,5000" },
      runs: { type: "string", default: "3" },
      concurrency: { type: "string", default: "8" },
      "latency-jobs": { type: "string", default: "200" },
      "async-commit": { type: "boolean", default: false },
      profile: { type: "boolean", default: false },
    },
  });
  const sizes = values.sizes.split(",").map(Number);
  const runs = Number(values.runs);
  const concurrency = Number(values.concurrency);
  const latencyJobs = Number(values["latency-jobs"]);
  if (sizes.some((n) => !Number.isInteger(n) || n < 1) || !(runs >= 1)) throw new Error("bad --sizes or --runs");

  await withScratchDatabase("conveyor_bench", async ({ url, name, admin }) => {
    // Diagnostic: with --async-commit both sides skip the WAL flush at commit,
    // which shows how much of the gap is commit latency.
    if (values["async-commit"]) await admin.query(`ALTER DATABASE ${name} SET synchronous_commit = off`);
    const tenantId = (await seed(0.001)).get("acme")!;
    // Admission's cap at twice the pool, as docs/ARCHITECTURE.md advises: one
    // admitted job waits behind each running one, so a slot never waits for admission.
    // (In the database, where caps live: a worker's QUEUE_* only seed a new one.)
    await pool().query(
      `UPDATE queues SET tenant_cap = $1, configured_at = now(), updated_at = now() WHERE name = 'bulk'`,
      [2 * concurrency],
    );
    const profiler = values.profile ? await Profiler.open(admin, name) : null;
    const xacts = async () =>
      Number(
        (
          await admin.query<{ n: string }>(
            `SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = $1`,
            [name],
          )
        ).rows[0]!.n,
      );
    const results: SizeResult[] = [];
    const latencies: LatencyResult[] = [];
    const fmt = (n: number) => n.toFixed(1);
    /** One side's figures for one size: kept for the medians, printed, and profiled when asked. */
    const record = async (
      side: SizeResult["side"],
      run: number,
      jobs: number,
      seconds: number,
      x0: number,
      enqueueRate: number,
    ) => {
      await sleep(600); // pg_stat_database lags the backends by up to 500 ms
      const r: SizeResult = {
        side,
        run,
        jobs,
        rate: jobs / seconds,
        xactsPerJob: ((await xacts()) - x0) / jobs,
        enqueueRate,
      };
      results.push(r);
      console.log(
        `run ${r.run} ${r.side.padEnd(8)} ${String(r.jobs).padStart(6)} jobs: ${Math.round(r.rate)} jobs/s ` +
          `(enqueued at ${Math.round(r.enqueueRate)}/s), ${fmt(r.xactsPerJob)} transactions/job`,
      );
      await profiler?.print(`${side === "bare" ? "bare" : "Conveyor"}, ${jobs} jobs`, jobs);
    };

    for (let run = 1; run <= runs; run++) {
      // ── Bare graphile-worker ──────────────────────────────────────────────
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
      const bareDrained = async () =>
        (await q<{ n: number }>(`SELECT count(*)::int AS n FROM graphile_worker.jobs`))[0]!.n === 0;
      for (const jobs of sizes) {
        await profiler?.reset();
        const x0 = await xacts();
        const t0 = performance.now();
        for (let i = 0; i < jobs; i += 50)
          await Promise.all(Array.from({ length: Math.min(50, jobs - i) }, () => addBare("throughput")));
        const enqueueRate = jobs / ((performance.now() - t0) / 1000);
        await waitUntil(bareDrained);
        await record("bare", run, jobs, (performance.now() - t0) / 1000, x0, enqueueRate);
      }
      for (let i = 0; i < latencyJobs; i++) {
        await addBare("latency");
        await sleep(20);
      }
      await waitUntil(bareDrained);
      await stopProcess(bare);
      const bareLatency = JSON.parse(readFileSync(latencyFile, "utf8")) as number[];
      latencies.push({ side: "bare", run, p50: percentile(bareLatency, 50), p99: percentile(bareLatency, 99) });

      // ── Conveyor, full bookkeeping ───────────────────────────────────────────
      const ours = await startWorker(["--queues", "bulk", "--concurrency", String(concurrency)], { DATABASE_URL: url });
      // Done when every job of the burst has said `succeeded` on the job events (no polling of a
      // table that grows by the burst: a count every 20 ms over 50,000 rows would load the server).
      const done = new Set<string>();
      const unsubscribe = await eventHub().subscribe({ tenantId }, (e) => {
        if (e.status === "succeeded") done.add(e.jobId);
      });
      const allSucceeded = async (ids: string[]) =>
        (
          await q<{ n: number }>(
            `SELECT count(*)::int AS n FROM jobs WHERE id = ANY($1::uuid[]) AND status = 'succeeded'`,
            [ids],
          )
        )[0]!.n === ids.length;
      for (const jobs of sizes) {
        await profiler?.reset();
        done.clear();
        const ids: string[] = [];
        const x0 = await xacts();
        const t0 = performance.now();
        for (let i = 0; i < jobs; i += 50) {
          const made = await Promise.all(
            Array.from({ length: Math.min(50, jobs - i) }, () => enqueueJob({ tenantId, type: "probe", input: {} })),
          );
          ids.push(...made.map((m) => m.job.id));
        }
        const enqueueRate = jobs / ((performance.now() - t0) / 1000);
        let checked = performance.now();
        await waitUntil(async () => {
          if (done.size >= ids.length && ids.every((id) => done.has(id))) return true;
          // A missed event (the LISTEN connection dropped) must not hang the run: the table decides every 2 s.
          if (performance.now() - checked < 2_000) return false;
          checked = performance.now();
          return allSucceeded(ids);
        });
        await record("conveyor", run, jobs, (performance.now() - t0) / 1000, x0, enqueueRate);
      }
      unsubscribe();
      const latencyIds: string[] = [];
      for (let i = 0; i < latencyJobs; i++) {
        latencyIds.push((await enqueueJob({ tenantId, type: "probe", input: {} })).job.id);
        await sleep(20);
      }
      await waitUntil(() => allSucceeded(latencyIds));
      await stopProcess(ours);
      const ourLatency = (
        await q<{ ms: number }>(
          `SELECT (extract(epoch FROM a.started_at - j.created_at) * 1000)::float8 AS ms
           FROM jobs j JOIN job_attempts a ON a.job_id = j.id AND a.attempt = 1 WHERE j.id = ANY($1::uuid[])`,
          [latencyIds],
        )
      ).map((r) => r.ms);
      latencies.push({ side: "conveyor", run, p50: percentile(ourLatency, 50), p99: percentile(ourLatency, 99) });
      console.log(
        `run ${run} latency: bare p50 ${fmt(latencies.at(-2)!.p50)} / p99 ${fmt(latencies.at(-2)!.p99)} ms, ` +
          `Conveyor p50 ${fmt(latencies.at(-1)!.p50)} / p99 ${fmt(latencies.at(-1)!.p99)} ms`,
      );
    }

    console.log(
      `\nThroughput benchmark: ${sizes.join(", ")} trivial jobs per burst, ${runs} runs (medians), 1 worker process, ` +
        `concurrency ${concurrency}; latency over ${latencyJobs} jobs added every 20 ms\n`,
    );
    console.log(
      "| jobs | bare jobs/s | Conveyor jobs/s | ratio (median of runs) | ratios of the runs | transactions/job bare / Conveyor |",
    );
    console.log("|---|---|---|---|---|---|");
    for (const jobs of sizes) {
      const of = (side: Side) => results.filter((r) => r.side === side && r.jobs === jobs);
      const bare = of("bare");
      const ours = of("conveyor");
      const ratios = ours.map((r) => r.rate / bare.find((b) => b.run === r.run)!.rate);
      console.log(
        `| ${jobs} | ${Math.round(median(bare.map((r) => r.rate)))} | ${Math.round(median(ours.map((r) => r.rate)))} | ` +
          `**${median(ratios).toFixed(2)}×** | ${ratios.map((x) => x.toFixed(2)).join(", ")} | ` +
          `${fmt(median(bare.map((r) => r.xactsPerJob)))} / ${fmt(median(ours.map((r) => r.xactsPerJob)))} |`,
      );
    }
    const lat = (side: Side, p: "p50" | "p99") => median(latencies.filter((l) => l.side === side).map((l) => l[p]));
    console.log(
      `\nadd→start (median of runs): bare p50 ${fmt(lat("bare", "p50"))} / p99 ${fmt(lat("bare", "p99"))} ms; ` +
        `Conveyor p50 ${fmt(lat("conveyor", "p50"))} / p99 ${fmt(lat("conveyor", "p99"))} ms`,
    );
    const biggest = sizes.at(-1)!;
    const bigRatios = results
      .filter((r) => r.side === "conveyor" && r.jobs === biggest)
      .map((r) => r.rate / results.find((b) => b.side === "bare" && b.jobs === biggest && b.run === r.run)!.rate);
    console.log(
      `goals: ${median(bigRatios).toFixed(2)}× bare throughput at ${biggest} jobs (goal ≥ 0.5×, aim 1.0×); ` +
        `p50 ${fmt(lat("conveyor", "p50") - lat("bare", "p50"))} ms over bare (goal ≤ 3 ms); ` +
        `p99 ${fmt(lat("conveyor", "p99"))} ms (goal ≤ 25 ms)`,
    );
  });
}

/** The statements that cost the most, per job, from pg_stat_statements (when the server loads it). */
class Profiler {
  private constructor(
    private readonly admin: pg.Client,
    private readonly dbName: string,
  ) {}

  static async open(admin: pg.Client, dbName: string): Promise<Profiler | null> {
    try {
      await admin.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
      await admin.query("SELECT pg_stat_statements_reset()");
      return new Profiler(admin, dbName);
    } catch (e) {
      console.log(`--profile: pg_stat_statements is not available (${(e as Error).message}); no statement profile`);
      return null;
    }
  }

  async reset(): Promise<void> {
    await this.admin.query("SELECT pg_stat_statements_reset()");
  }

  async print(title: string, jobs: number): Promise<void> {
    // Top-level statements, then (with pg_stat_statements.track = all) those that triggers and functions ran.
    const { rows } = await this.admin.query<{ calls: string; ms: number; query: string; toplevel: boolean }>(
      `SELECT s.calls, s.total_exec_time AS ms, s.toplevel,
              regexp_replace(left(regexp_replace(s.query, '\\s+', ' ', 'g'), 120), '\\s+', ' ', 'g') AS query
         FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
        WHERE d.datname = $1 ORDER BY s.toplevel DESC, s.total_exec_time DESC`,
      [this.dbName],
    );
    const total = await this.admin.query<{ ms: number; calls: string }>(
      `SELECT sum(total_exec_time) AS ms, sum(calls) AS calls FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
        WHERE d.datname = $1 AND s.toplevel`,
      [this.dbName],
    );
    console.log(
      `  profile (${title}): ${(Number(total.rows[0]!.ms) / jobs).toFixed(3)} ms and ${(Number(total.rows[0]!.calls) / jobs).toFixed(1)} statements per job in all`,
    );
    for (const top of [true, false])
      for (const r of rows.filter((r) => r.toplevel === top).slice(0, top ? 14 : 12))
        console.log(
          `    ${top ? "" : "(nested) "}${(r.ms / jobs).toFixed(3)} ms/job  ${(Number(r.calls) / jobs).toFixed(2)} calls/job  ${r.query}`,
        );
  }
}

main().then(
  () => process.exit(0),
  (err: Error) => {
    console.error(err.stack ?? err.message);
    process.exit(1);
  },
);
