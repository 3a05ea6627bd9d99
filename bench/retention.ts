/**
 * npm run bench:retention [-- --share 0.3 --days 60 --batch 1000 --runs 30] — the pruner on the
 * database `npm run seed:big` filled (the same DATABASE_URL, or npm start's embedded Postgres).
 *
 * It ages a share of the finished jobs younger than JOB_RETENTION_DAYS (their times moved
 * `--days` into the past, triggers off, as seed:big writes them), then runs the pruner's
 * batches (lib/retention, the code every worker runs) until nothing is left, and prints the
 * time per batch and rows per second. Meanwhile it keeps calling the console's job list and
 * overview through their real route handlers (as bench:console does) and compares their
 * latency with a baseline taken just before, without the pruner: the ratios are the result.
 *
 * The database is consumed: pruned jobs are gone (run seed:big again for a fresh one). Aged
 * dead letters younger than DEAD_LETTER_RETENTION_DAYS stay, as they would in production.
 */
import { parseArgs } from "node:util";
import { GET as listJobs } from "@/app/api/v1/ops/jobs/route";
import { GET as overview } from "@/app/api/v1/ops/overview/route";
import { createApiTokenForEmail } from "@/lib/auth/tokens";
import { closeDb, pool } from "@/lib/db";
import { env } from "@/lib/env";
import { pruneOnce, rowsOf, type PruneBatch } from "@/lib/retention/prune";
import { migrate, openDatabase } from "@/scripts/database";
import { percentile } from "./harness";
import "@/lib/workloads";

type Case = { name: string; path: string; token: "operator" | "admin"; query: string };

const ctx = { params: Promise.resolve({}) };
const auth = (token: string) => ({ headers: { Authorization: `Bearer ${token}` } });

const cases: Case[] = [
  { name: "list, newest 50 (operator)", path: "/api/v1/ops/jobs", token: "operator", query: "" },
  { name: "list, all tenants (admin)", path: "/api/v1/ops/jobs", token: "admin", query: "" },
  { name: "filter status=failed", path: "/api/v1/ops/jobs", token: "operator", query: "status=failed" },
  { name: "overview (operator)", path: "/api/v1/ops/overview", token: "operator", query: "" },
  { name: "overview (admin, all tenants)", path: "/api/v1/ops/overview", token: "admin", query: "" },
];

async function main() {
  const { values } = parseArgs({
    options: {
      share: { type: "string", default: "0.3" },
      days: { type: "string", default: "60" },
      batch: { type: "string", default: String(env().PRUNE_BATCH_SIZE) },
      runs: { type: "string", default: "30" },
    },
  });
  const share = Number(values.share);
  const days = Number(values.days);
  const batchSize = Number(values.batch);
  const runs = Number(values.runs);
  if (!(share > 0 && share <= 1)) throw new Error(`--share: a fraction from 0 to 1 (got ${values.share})`);
  if (!(Number.isInteger(days) && days > env().JOB_RETENTION_DAYS)) {
    throw new Error(`--days: whole days past JOB_RETENTION_DAYS (${env().JOB_RETENTION_DAYS}) (got ${values.days})`);
  }
  if (!(Number.isInteger(batchSize) && batchSize >= 1))
    throw new Error(`--batch: a whole number (got ${values.batch})`);
  if (!(Number.isInteger(runs) && runs >= 5)) throw new Error(`--runs: at least 5 (got ${values.runs})`);

  const database = await openDatabase(() => {});
  try {
    await migrate(database.url);
    const count = async () => Number((await pool().query<{ n: string }>("SELECT count(*) AS n FROM jobs")).rows[0]!.n);
    const before = await count();
    if (before < 100_000) console.warn(`[bench:retention] only ${before} jobs: run npm run seed:big first`);

    // Age a share of the finished jobs the pruner would keep today.
    let t = performance.now();
    const aged = await agedShare(share, days);
    const agingMs = performance.now() - t;
    console.log(
      `[bench:retention] ${before.toLocaleString("en-US")} jobs; aged ${aged.toLocaleString("en-US")} finished jobs ` +
        `(${(share * 100).toFixed(0)}% of those younger than ${env().JOB_RETENTION_DAYS} days) by ${days} days in ${(agingMs / 1000).toFixed(1)} s`,
    );

    const tokens = {
      operator: await createApiTokenForEmail("oscar@acme.test", "bench:retention", "acme"),
      admin: await createApiTokenForEmail("root@conveyor.test", "bench:retention"),
    };
    const call = async (c: Case): Promise<number> => {
      const start = performance.now();
      const res = await (c.path.endsWith("overview") ? overview : listJobs)(
        new Request(`http://bench${c.path}?${c.query}`, auth(tokens[c.token])),
        ctx,
      );
      const body = (await res.json()) as { error?: { message: string } };
      if (res.status !== 200) throw new Error(`${c.name}: ${res.status} ${body.error?.message}`);
      return performance.now() - start;
    };

    // Baseline: no pruner. 3 warm-ups per case, then `runs` rounds over the cases.
    const quiet = new Map<string, number[]>(cases.map((c) => [c.name, []]));
    for (const c of cases) for (let i = 0; i < 3; i++) await call(c);
    for (let i = 0; i < runs; i++) for (const c of cases) quiet.get(c.name)!.push(await call(c));

    // The pruner, tick after tick until a tick prunes nothing, while the console is read.
    const busy = new Map<string, number[]>(cases.map((c) => [c.name, []]));
    const batches: PruneBatch[] = [];
    let pruning = true;
    t = performance.now();
    const pruner = (async () => {
      try {
        for (;;) {
          const r = await pruneOnce({ batchSize, budgetMs: 600_000, onBatch: (b) => batches.push(b) });
          if (!r.ran) throw new Error("another process holds the prune lock: stop the workers on this database");
          if (!r.batches.some((b) => rowsOf(b) > 0)) break;
        }
      } finally {
        pruning = false;
      }
    })();
    let rounds = 0;
    while (pruning || rounds < 5) {
      for (const c of cases) busy.get(c.name)!.push(await call(c));
      rounds++;
      if (!pruning && rounds >= 5) break;
    }
    await pruner;
    const pruneMs = performance.now() - t;
    const after = await count();

    const jobBatches = batches.filter((b) => b.kind === "jobs" && b.rows.jobs > 0);
    const ms = jobBatches.map((b) => b.ms);
    const rows = batches.reduce((s, b) => s + rowsOf(b), 0);
    const jobs = batches.reduce((s, b) => s + b.rows.jobs, 0);
    const byTable = batches.reduce(
      (s, b) => ({ attempts: s.attempts + b.rows.attempts, transitions: s.transitions + b.rows.transitions }),
      { attempts: 0, transitions: 0 },
    );
    console.log(
      `[bench:retention] pruned ${jobs.toLocaleString("en-US")} jobs (${byTable.attempts.toLocaleString("en-US")} attempts, ` +
        `${byTable.transitions.toLocaleString("en-US")} transitions; ${rows.toLocaleString("en-US")} rows) in ` +
        `${batches.length} batches of up to ${batchSize} root jobs, ${(pruneMs / 1000).toFixed(1)} s; ` +
        `${before.toLocaleString("en-US")} → ${after.toLocaleString("en-US")} jobs`,
    );
    console.log("");
    console.log("| pruner | value |");
    console.log("|---|---|");
    console.log(`| job batches (with deletions) | ${jobBatches.length} |`);
    console.log(
      `| time per job batch p50 / p95 / max | ${percentile(ms, 50).toFixed(0)} / ${percentile(ms, 95).toFixed(0)} / ${Math.max(0, ...ms).toFixed(0)} ms |`,
    );
    console.log(`| rows per second (all tables) | ${Math.round(rows / (pruneMs / 1000)).toLocaleString("en-US")} |`);
    console.log(`| jobs per second | ${Math.round(jobs / (pruneMs / 1000)).toLocaleString("en-US")} |`);
    console.log("");
    console.log("| console case | quiet p50 / p95 ms | while pruning p50 / p95 ms | p95 ratio |");
    console.log("|---|---|---|---|");
    for (const c of cases) {
      const q = quiet.get(c.name)!;
      const b = busy.get(c.name)!;
      console.log(
        `| ${c.name} | ${percentile(q, 50).toFixed(1)} / ${percentile(q, 95).toFixed(1)} | ` +
          `${percentile(b, 50).toFixed(1)} / ${percentile(b, 95).toFixed(1)} (${b.length} runs) | ` +
          `${(percentile(b, 95) / percentile(q, 95)).toFixed(2)}× |`,
      );
    }
  } finally {
    await closeDb();
    await database.stop();
  }
}

/** Moves `share` of the finished jobs younger than JOB_RETENTION_DAYS `days` into the past; how many. */
async function agedShare(share: number, days: number): Promise<number> {
  const c = await pool().connect();
  try {
    await c.query("BEGIN");
    // As seed:big writes: no trigger per row (it needs a superuser, as the local databases are).
    await c.query("SET LOCAL session_replication_role = replica");
    const { rowCount } = await c.query(
      `UPDATE jobs SET created_at = created_at - make_interval(days => $2), run_at = run_at - make_interval(days => $2),
              started_at = started_at - make_interval(days => $2), finished_at = finished_at - make_interval(days => $2),
              discarded_at = discarded_at - make_interval(days => $2), updated_at = updated_at - make_interval(days => $2)
        WHERE status IN ('succeeded', 'failed', 'cancelled', 'expired') AND parent_id IS NULL
          AND finished_at > now() - make_interval(days => $3)
          AND (hashtext(id::text) & 1023) < $1::float8 * 1024`,
      [share, days, env().JOB_RETENTION_DAYS],
    );
    await c.query("COMMIT");
    await c.query("ANALYZE jobs");
    return rowCount ?? 0;
  } catch (err) {
    await c.query("ROLLBACK");
    throw err;
  } finally {
    c.release();
  }
}

main().catch((err: Error) => {
  console.error(`[bench:retention] failed: ${err.message}`);
  process.exit(1);
});
