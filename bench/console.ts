/**
 * npm run bench:console [-- --runs 50] — the operator console's read endpoints
 * against the database `npm run seed:big` filled (the same DATABASE_URL, or
 * npm start's embedded Postgres). Each request goes through the real route
 * handler in this process: Bearer-token authentication, validation, the lib
 * query, JSON serialisation; only the HTTP socket is left out. Goals: p95 ≤ 100 ms
 * for lists and filters, ≤ 200 ms for the overview.
 *
 * Timings are reported next to a baseline taken in the same run: the database's
 * round trip for `SELECT 1`, so a slow machine reads as such.
 */
import { parseArgs } from "node:util";
import { GET as listJobs } from "@/app/api/v1/ops/jobs/route";
import { GET as overview } from "@/app/api/v1/ops/overview/route";
import { createApiTokenForEmail } from "@/lib/auth/tokens";
import { closeDb, pool } from "@/lib/db";
import { openDatabase } from "@/scripts/database";
import { percentile } from "./harness";
import "@/lib/workloads";

type Case = { name: string; kind: "list" | "overview"; token: "operator" | "admin"; query: string };

const ctx = { params: Promise.resolve({}) };

async function main() {
  const { values } = parseArgs({ options: { runs: { type: "string", default: "50" } } });
  const runs = Number(values.runs);
  const database = await openDatabase(() => {});
  try {
    const { rows } = await pool().query<{ n: string }>("SELECT count(*) AS n FROM jobs");
    const jobs = Number(rows[0]!.n);
    if (jobs < 100_000) console.warn(`[bench:console] only ${jobs} jobs: run npm run seed:big first`);
    const tokens = {
      operator: await createApiTokenForEmail("oscar@acme.test", "bench:console", "acme"),
      admin: await createApiTokenForEmail("root@conveyor.test", "bench:console"),
    };
    // A rare term: one dead job's row number, as an operator would paste it from an error.
    const { rows: rare } = await pool().query<{ term: string }>(
      `SELECT substring(error_message from 'row [0-9]+:') AS term FROM jobs
       WHERE tenant_id = (SELECT id FROM tenants WHERE slug = 'acme') AND error_message ~ 'invalid row [0-9]{6}:' LIMIT 1`,
    );
    const rareTerm = rare[0]?.term ?? "row 1";
    const dayAgo = new Date(Date.now() - 86_400_000).toISOString();
    const weekAgo = new Date(Date.now() - 7 * 86_400_000).toISOString();

    // A cursor from deep in the list: page 2 of a typical scroll.
    const first = (await (
      await listJobs(new Request("http://bench/api/v1/ops/jobs?limit=50", auth(tokens.operator)), ctx)
    ).json()) as { nextCursor: string };

    const cases: Case[] = [
      { name: "list, newest 50 (operator)", kind: "list", token: "operator", query: "" },
      { name: "list, page 2 by cursor", kind: "list", token: "operator", query: `cursor=${first.nextCursor}` },
      { name: "list, all tenants (admin)", kind: "list", token: "admin", query: "" },
      { name: "filter status=failed", kind: "list", token: "operator", query: "status=failed" },
      { name: "filter status=queued", kind: "list", token: "operator", query: "status=queued" },
      { name: "filter type=probe queue=bulk", kind: "list", token: "operator", query: "type=probe&queue=bulk" },
      { name: "filter last day", kind: "list", token: "operator", query: `from=${encodeURIComponent(dayAgo)}` },
      {
        name: "filter status=retrying, 1 week ago to 1 day ago",
        kind: "list",
        token: "operator",
        query: `status=retrying&from=${encodeURIComponent(weekAgo)}&to=${encodeURIComponent(dayAgo)}`,
      },
      {
        name: "filter admin tenant=globex status=failed",
        kind: "list",
        token: "admin",
        query: "tenant=globex&status=failed",
      },
      { name: "search q=timeout (common)", kind: "list", token: "operator", query: "q=timeout" },
      {
        name: `search q=${rareTerm} (one job)`,
        kind: "list",
        token: "operator",
        query: `q=${encodeURIComponent(rareTerm)}`,
      },
      { name: "search q=batch 999 (0.1% of jobs)", kind: "list", token: "operator", query: "q=batch%20999" },
      { name: "search q=nothing-matches", kind: "list", token: "operator", query: "q=zzqx-nothing" },
      { name: "search q=timeout (admin, all)", kind: "list", token: "admin", query: "q=timeout" },
      { name: "overview (operator)", kind: "overview", token: "operator", query: "" },
      { name: "overview (admin, all tenants)", kind: "overview", token: "admin", query: "" },
      { name: "overview (admin, queue=bulk)", kind: "overview", token: "admin", query: "queue=bulk" },
    ];

    const baseline: number[] = [];
    for (let i = 0; i < runs; i++) {
      const t = performance.now();
      await pool().query("SELECT 1");
      baseline.push(performance.now() - t);
    }

    console.log(`[bench:console] ${jobs.toLocaleString("en-US")} jobs, ${runs} runs per case after 3 warm-ups`);
    console.log(`[bench:console] baseline SELECT 1 round trip p50 ${percentile(baseline, 50).toFixed(2)} ms`);
    console.log("");
    console.log("| case | rows | p50 ms | p95 ms | goal |");
    console.log("|---|---|---|---|---|");
    let failed = 0;
    for (const c of cases) {
      const handler = c.kind === "list" ? listJobs : overview;
      const path = c.kind === "list" ? "/api/v1/ops/jobs" : "/api/v1/ops/overview";
      const times: number[] = [];
      let count = 0;
      for (let i = 0; i < runs + 3; i++) {
        const t = performance.now();
        const res = await handler(new Request(`http://bench${path}?${c.query}`, auth(tokens[c.token])), ctx);
        const body = (await res.json()) as { jobs?: unknown[]; rows?: unknown[]; error?: { message: string } };
        if (res.status !== 200) throw new Error(`${c.name}: ${res.status} ${body.error?.message}`);
        if (i >= 3) times.push(performance.now() - t);
        count = (body.jobs ?? body.rows ?? []).length;
      }
      const goal = c.kind === "list" ? 100 : 200;
      const p95 = percentile(times, 95);
      if (p95 > goal) failed++;
      console.log(
        `| ${c.name} | ${count} | ${percentile(times, 50).toFixed(1)} | ${p95.toFixed(1)} | ${p95 <= goal ? "✔" : "✘"} ≤ ${goal} |`,
      );
    }
    console.log("");
    console.log(`[bench:console] ${cases.length - failed} of ${cases.length} cases within their goal`);
    await pool().query(`UPDATE api_tokens SET revoked_at = now() WHERE name = 'bench:console' AND revoked_at IS NULL`);
  } finally {
    await closeDb();
    await database.stop();
  }
}

function auth(token: string): RequestInit {
  return { headers: { Authorization: `Bearer ${token}` } };
}

main().catch((err: Error) => {
  console.error(`[bench:console] failed: ${err.stack ?? err.message}`);
  process.exit(1);
});
