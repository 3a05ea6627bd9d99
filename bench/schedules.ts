/**
 * npm run bench:schedules [-- --schedules 1000 --ahead 40 --task export]
 * 1,000 schedules due in the same second, through the path users take: the
 * server `npm start` runs (scripts/supervisor.ts: the web server and its two
 * worker processes, default settings but quotas that fit the schedules and their runs, over a scratch database with the demo
 * tenants), the schedules created with POST /api/v1/schedules by four members
 * of two tenants (a bearer token each, within the default rate limit), each with
 * the cron "S M H * * *" (UTC) of one second `--ahead` seconds away (further
 * if a warm-up of 40 creates shows that making them all would take longer). The runs
 * are exports of a tiny filter (no rows: the header only) — `--task probe`
 * runs the no-op probe instead. Reported: materialization lag (created_at −
 * scheduled_for) and start lag (started_at − scheduled_for), p50 and p99.
 *
 * The baseline, in the same run on the same database: bare graphile-worker
 * (bench/bare-worker.ts, a no-op task, one process with the concurrency of the
 * product's bulk pool, where schedules' runs go) with 1,000 jobs added ahead
 * with one run_at (add_job's run_at); its start lag is its start − run_at.
 */
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { createApiTokenForEmail, principalFromToken } from "@/lib/auth/tokens";
import { createSchedule } from "@/lib/schedules/service";
import { pool } from "@/lib/db";
import { env } from "@/lib/env";
import "@/lib/workloads";
import { seed } from "../prisma/seed";
import { withScratchDatabase } from "../scripts/database";
import { percentile, q, startProcess, startProduct, stopProcess, stopProduct } from "./harness";

const fmt = (n: number) => (Number.isFinite(n) ? `${n.toFixed(0)} ms` : "—");

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      schedules: { type: "string", default: "1000" },
      ahead: { type: "string", default: "40" },
      task: { type: "string", default: "export" },
    },
  });
  const n = Number(values.schedules);
  // The probe's schedules are created in this process (it is internal): its cap too.
  process.env.QUOTA_SCHEDULES_PER_TENANT = String(n);
  const task = values.task === "probe" ? "probe" : "export";
  const input =
    task === "export"
      ? // A tiny export: a one-second window long before any data (the header only).
        { dataset: "customers", format: "csv", filter: { from: "2001-01-01T00:00:00Z", to: "2001-01-01T00:00:01Z" } }
      : { sleepMs: 0 };
  // The product's bulk pool (where every schedule's run goes) runs WORKER_CONCURRENCY jobs at once.
  const concurrency = env().WORKER_CONCURRENCY;
  const dataDir = await mkdtemp(path.join(tmpdir(), "conveyor-bench-schedules-"));

  await withScratchDatabase("conveyor_bench_schedules", async ({ url }) => {
    await seed(0.001);
    const members = ["ada@acme.test", "oscar@acme.test", "gus@globex.test", "gina@globex.test"];
    const tokens = await Promise.all(members.map((m) => createApiTokenForEmail(m, "bench:schedules")));

    // ── Baseline: bare graphile-worker, 1,000 jobs with one run_at ──────────
    const latencyFile = path.join(tmpdir(), `conveyor-bare-schedules-${process.pid}.json`);
    const bare = await startProcess(
      ["bench/bare-worker.ts", latencyFile, String(concurrency)],
      { DATABASE_URL: url },
      /ready/,
    );
    const bareRunAt = Math.ceil((Date.now() + 5_000) / 1000) * 1000;
    await pool().query(
      `SELECT graphile_worker.add_job('bare_noop', json_build_object('addedAt', $1::bigint, 'phase', 'latency'),
                                      run_at := to_timestamp($1::bigint / 1000.0))
         FROM generate_series(1, $2::int)`,
      [bareRunAt, n],
    );
    while (Date.now() < bareRunAt) await sleep(100);
    while ((await q<{ n: number }>(`SELECT count(*)::int AS n FROM graphile_worker.jobs`))[0]!.n > 0) await sleep(50);
    await stopProcess(bare);
    const bareStart = JSON.parse(readFileSync(latencyFile, "utf8")) as number[];
    await rm(latencyFile, { force: true });

    // ── Conveyor: 1,000 schedules due in one second, through npm start's server ──
    // Default settings but the quotas: 1,000 schedules of two tenants, a run each in one second.
    const quotas = {
      QUOTA_SCHEDULES_PER_TENANT: String(n),
      QUOTA_JOBS_PER_USER: String(n),
      QUOTA_JOBS_PER_TENANT: String(n),
    };
    const { base, child } = await startProduct(url, { CONVEYOR_DATA_DIR: dataDir, ...quotas });
    try {
      const statuses = new Map<number, number>();
      /** Creates schedules `from`…`to` (exclusive) with `cron`: each member its share, four requests in flight each. */
      const create = async (from: number, to: number, cron: string, prefix: string) => {
        await Promise.all(
          tokens.map(async (token, k) => {
            let next = from + k;
            await Promise.all(
              Array.from({ length: 4 }, async () => {
                for (let i = next; i < to; i = next) {
                  next += tokens.length;
                  const body = { name: `${prefix} ${i}`, cron, timezone: "UTC", task, input };
                  let status: number;
                  if (task === "probe") {
                    // The probe is internal: no request schedules it, code in this process does.
                    const principal = (await principalFromToken(token))!;
                    status = await createSchedule(principal, body, { internal: true }).then(
                      () => 201,
                      (e: { status?: number }) => e.status ?? 500,
                    );
                  } else {
                    const res = await fetch(`${base}/api/v1/schedules`, {
                      method: "POST",
                      headers: { Authorization: `Bearer ${token}`, "content-type": "application/json" },
                      body: JSON.stringify(body),
                    });
                    await res.arrayBuffer();
                    status = res.status;
                  }
                  statuses.set(status, (statuses.get(status) ?? 0) + 1);
                }
              }),
            );
          }),
        );
      };
      // A warm-up (the route's first requests load it), then a measure of how fast schedules are made
      // here: 40 schedules in all that run on 1 January only.
      await create(0, 8, "0 0 0 1 1 *", "warm-up");
      const w0 = performance.now();
      await create(8, 40, "0 0 0 1 1 *", "warm-up");
      const perSchedule = (performance.now() - w0) / 32;
      // The due second: `--ahead` seconds from now, or later if making them all would take longer.
      const ahead = Math.max(Number(values.ahead) * 1000, 1.5 * perSchedule * n + 10_000);
      const due = new Date(Math.ceil((Date.now() + ahead) / 1000) * 1000);
      const cron = `${due.getUTCSeconds()} ${due.getUTCMinutes()} ${due.getUTCHours()} * * *`;
      console.log(
        `creating ${n} schedules "${cron}" (UTC, due ${due.toISOString()}, ${(ahead / 1000).toFixed(0)} s ahead), task ${task}`,
      );
      statuses.clear();
      const t0 = performance.now();
      await create(0, n, cron, "bench");
      const createdIn = (performance.now() - t0) / 1000;
      const [made] = await q<{ n: number; next: Date | null }>(
        `SELECT count(*)::int AS n, max(next_run_at) AS next FROM schedules WHERE cron = $1`,
        [cron],
      );
      console.log(
        `created in ${createdIn.toFixed(1)} s: ${[...statuses].map(([s, k]) => `${k} × ${s}`).join(", ")}; ` +
          `${made!.n} schedules, all due ${made!.next?.toISOString()}`,
      );
      if (Date.now() > due.getTime() - 1_000) {
        throw new Error(`creating took until after the due second: run again with a larger --ahead`);
      }
      // Until every run exists and has started.
      const deadline = due.getTime() + 15 * 60_000;
      for (;;) {
        const [r] = await q<{ runs: number; started: number }>(
          `SELECT count(*)::int AS runs, count(started_at)::int AS started FROM jobs JOIN schedule_runs r ON r.job_id = jobs.id WHERE r.scheduled_for = $1`,
          [due],
        );
        if ((r!.runs === made!.n && r!.started === made!.n) || Date.now() > deadline) break;
        await sleep(500);
      }
      const rows = await q<{ materialize: number; start: number | null }>(
        `SELECT (extract(epoch FROM created_at - r.scheduled_for) * 1000)::float8 AS materialize,
                (extract(epoch FROM started_at - r.scheduled_for) * 1000)::float8 AS start
           FROM jobs JOIN schedule_runs r ON r.job_id = jobs.id WHERE r.scheduled_for = $1`,
        [due],
      );
      const [ended] = await q<{ ended: number; last: number | null }>(
        `SELECT count(*) FILTER (WHERE status IN ('succeeded', 'failed', 'cancelled'))::int AS ended,
                (extract(epoch FROM max(finished_at) - min(r.scheduled_for)) * 1000)::float8 AS last
           FROM jobs JOIN schedule_runs r ON r.job_id = jobs.id WHERE r.scheduled_for = $1`,
        [due],
      );
      // The runs were made in transactions of up to 100 (one created_at each), by both workers' schedulers.
      const batches = [...new Set(rows.map((r) => r.materialize))].sort((a, b) => a - b);
      const materialize = rows.map((r) => r.materialize);
      const start = rows.filter((r) => r.start !== null).map((r) => r.start!);

      console.log(
        `\nSchedules benchmark: ${n} schedules due in the same second, through npm start (default settings; ` +
          `runs: ${task === "export" ? "exports of a tiny filter" : "probe, no-op"}); ` +
          `baseline: bare graphile-worker, ${n} no-op jobs with one run_at, 1 process × concurrency ${concurrency}\n`,
      );
      console.log("| | runs | materialization lag p50 | p99 | start lag p50 | p99 | max |");
      console.log("|---|---|---|---|---|---|---|");
      console.log(
        `| bare graphile-worker (add_job run_at, no-op) | ${bareStart.length} | — | — | ${fmt(percentile(bareStart, 50))} | ${fmt(percentile(bareStart, 99))} | ${fmt(Math.max(...bareStart))} |`,
      );
      console.log(
        `| Conveyor schedules (${task}) | ${rows.length} | ${fmt(percentile(materialize, 50))} | ${fmt(percentile(materialize, 99))} | ${fmt(percentile(start, 50))} | ${fmt(percentile(start, 99))} | ${fmt(Math.max(...start))} |`,
      );
      console.log(
        `\nall ${rows.length} runs made within ${fmt(Math.max(...materialize))} of their time (goal: p99 ≤ 1000 ms), ` +
          `in ${batches.length} transactions starting ${batches.map((b) => b.toFixed(0)).join(", ")} ms after it; ` +
          `${ended!.ended} ended, the last ${fmt(ended!.last ?? NaN)} after its time`,
      );
      const ratio = (a: number, b: number) => (b > 0 ? `${(a / b).toFixed(2)}×` : "—");
      console.log(
        `ratio, start lag Conveyor / bare: p50 ${ratio(percentile(start, 50), percentile(bareStart, 50))}, ` +
          `p99 ${ratio(percentile(start, 99), percentile(bareStart, 99))}`,
      );
    } finally {
      await stopProduct(child);
    }
  });
  await rm(dataDir, { recursive: true, force: true });
}

main().catch((err: Error) => {
  console.error(err.stack ?? err.message);
  process.exit(1);
});
