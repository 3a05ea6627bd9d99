/**
 * npm run bench:api [-- --sequential 300 --clients 20 --seconds 10 --backlog 200 --backlog-runs 5 --pgbouncer]
 * Accepting a job: `POST /api/v1/exports` → 202 through the product as `npm start`
 * runs it (a scratch database), beside `GET /api/health` (one `SELECT 1`) on the same
 * server in the same run:
 *   1. idle, sequential: p50 and p99 of each, interleaved (each export created then runs at
 *      once, on the same cores); 1b. the same with the tenant paused (the accept path alone);
 *   2. the same while the worker pools export (a second client keeps creating exports);
 *      2b. creates one after the other while a resumed backlog of `--backlog` exports drains,
 *      `--backlog-runs` times (p50, p99 each run; the goal: p99 ≤ 100 ms in every run);
 *   3. `--clients` concurrent clients for `--seconds` each: health, a token-authenticated
 *      `GET /api/v1/jobs?limit=1`, and creates (the tenant paused, so no worker competes);
 *      pgbench single-row INSERTs into the same server printed beside them;
 *   4. where a create's milliseconds go, in this process (a second line, not the figure):
 *      authentication, validation and the create itself, each through its lib/ function.
 *   5. with `--pgbouncer`: the product started again with DATABASE_URL through a PgBouncer in
 *      transaction pooling mode (Debian's, tests/helpers/pgbouncer.ts; DATABASE_DIRECT_URL direct,
 *      statements unnamed as the start-up probe decides) and 1b and 3 measured again, each beside
 *      part 1b's and 3's direct figures as a ratio.
 * Rate limits and quotas are turned off for the run (RATE_LIMIT_*=0, QUOTA_*=10M): the
 * defaults (300 writes a minute per token, 50 unfinished jobs per user) would refuse
 * the load this measures.
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs, promisify } from "node:util";
import { GET as healthRoute } from "@/app/api/health/route";
import { POST as createRoute } from "@/app/api/v1/exports/route";
import { createPause, resumePause } from "@/lib/admission/pauses";
import { loadUserPrincipal } from "@/lib/auth/principal";
import { createApiTokenForEmail, principalFromToken } from "@/lib/auth/tokens";
import { closeDb } from "@/lib/db";
import { logger } from "@/lib/log";
import { requestExport } from "@/lib/exports/service";
import { exportRequestSchema } from "@/lib/exports/schema";
import { seed } from "../prisma/seed";
import { withScratchDatabase } from "../scripts/database";
import { cpuByRole, cpuPerRequest, percentile, q, startProduct, stopProduct } from "./harness";
import { pgbouncerMissing, startPgBouncer } from "../tests/helpers/pgbouncer";
import "@/lib/workloads";

const run = promisify(execFile);
const { values } = parseArgs({
  options: {
    sequential: { type: "string", default: "300" },
    clients: { type: "string", default: "20" },
    seconds: { type: "string", default: "10" },
    pgbouncer: { type: "boolean", default: false },
    "backlog-runs": { type: "string", default: "5" },
    backlog: { type: "string", default: "200" },
  },
});
const BACKLOG_RUNS = Number(values["backlog-runs"]);
const BACKLOG = Number(values.backlog);
const SEQUENTIAL = Number(values.sequential);
const CLIENTS = Number(values.clients);
const SECONDS = Number(values.seconds);
const BODY = JSON.stringify({ dataset: "customers", format: "csv" });

const ms = (x: number) => `${x.toFixed(1)} ms`;

async function timed(fn: () => Promise<Response>, expect: number): Promise<number> {
  const t = performance.now();
  const r = await fn();
  await r.arrayBuffer();
  if (r.status !== expect) throw new Error(`expected ${expect}, got ${r.status}`);
  return performance.now() - t;
}

function calls(base: string, token: string) {
  const auth = { Authorization: `Bearer ${token}` };
  return {
    health: () => fetch(`${base}/api/health`),
    list: () => fetch(`${base}/api/v1/jobs?limit=1`, { headers: auth }),
    create: () =>
      fetch(`${base}/api/v1/exports`, {
        method: "POST",
        headers: { ...auth, "Content-Type": "application/json" },
        body: BODY,
      }),
  };
}

/** Health and create, interleaved one after another: their latencies. */
async function sequential(c: ReturnType<typeof calls>, n: number) {
  const health: number[] = [];
  const create: number[] = [];
  for (let i = 0; i < n; i++) {
    health.push(await timed(c.health, 200));
    create.push(await timed(c.create, 202));
  }
  return { health, create };
}

/** `clients` loops calling `fn` for `seconds`: requests per second and latencies. */
async function concurrent(fn: () => Promise<Response>, expect: number) {
  const lat: number[] = [];
  const cpu = cpuByRole();
  const until = performance.now() + SECONDS * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (performance.now() < until) lat.push(await timed(fn, expect));
    }),
  );
  return {
    rps: lat.length / ((performance.now() - started) / 1000),
    lat,
    cpu: cpuPerRequest(cpu, cpuByRole(), lat.length),
  };
}

/** Parts 1b and 3 (Acme paused): the accept path alone, sequential then concurrent; printed. */
async function acceptPath(c: ReturnType<typeof calls>) {
  const alone = await sequential(c, SEQUENTIAL);
  console.log("\n1b. idle, sequential, Acme paused (the accept path alone: no export runs after the 202)");
  console.log(line("GET /api/health", alone.health));
  console.log(line("POST /api/v1/exports → 202", alone.create));
  console.log(
    `   create p50 − health p50: ${ms(percentile(alone.create, 50) - percentile(alone.health, 50))} (goal ≤ 3 ms); create p99 ${ms(percentile(alone.create, 99))} (goal ≤ 25 ms)`,
  );
  const h = await concurrent(c.health, 200);
  const l = await concurrent(c.list, 200);
  const k = await concurrent(c.create, 202);
  console.log(`\n3. ${CLIENTS} concurrent clients for ${SECONDS} s each (Acme paused)`);
  for (const [name, r] of [
    ["GET /api/health", h],
    ["GET /api/v1/jobs?limit=1 (token)", l],
    ["POST /api/v1/exports → 202", k],
  ] as const) {
    console.log(`${line(name, r.lat)}  ${r.rps.toFixed(0).padStart(6)} req/s`);
  }
  console.log("   CPU ms per request, by process (the two cores are shared by all of them):");
  for (const [name, r] of [
    ["health", h],
    ["token list", l],
    ["create", k],
  ] as const) {
    console.log(`     ${name.padEnd(11)} ${r.cpu}`);
  }
  console.log(`   creates ÷ health: ${(k.rps / h.rps).toFixed(2)}× (goal ≥ 0.8×)`);
  return { alone, h, l, k };
}

function line(name: string, xs: number[]) {
  return `${name.padEnd(34)} p50 ${ms(percentile(xs, 50)).padStart(9)}  p99 ${ms(percentile(xs, 99)).padStart(9)}`;
}

/** Off for the server (startProduct) and for this process's own creates (part 4) alike. */
const UNLIMITED = {
  RATE_LIMIT_READS_PER_MINUTE: "0",
  RATE_LIMIT_WRITES_PER_MINUTE: "0",
  QUOTA_JOBS_PER_USER: "10000000",
  QUOTA_JOBS_PER_TENANT: "10000000",
};

async function main() {
  Object.assign(process.env, UNLIMITED);
  const dir = await mkdtemp(path.join(tmpdir(), "bench-api-"));
  try {
    await withScratchDatabase("conveyor_bench_api", async ({ url }) => {
      await seed(0.01);
      const token = await createApiTokenForEmail("ada@acme.test", "bench:api");
      const other = await createApiTokenForEmail("ada@acme.test", "bench:api load");
      const { base, child } = await startProduct(url, {
        CONVEYOR_DATA_DIR: path.join(dir, "data"),
        ...UNLIMITED,
        LOG_LEVEL: "warn",
      });
      let idle: { health: number[]; create: number[] };
      let directAccept: Awaited<ReturnType<typeof acceptPath>> | undefined;
      try {
        const c = calls(base, token);
        await sequential(c, 30); // warm-up: compiled routes, pools, plans
        console.log(
          `bench:api — ${new Date().toISOString()}, ${SEQUENTIAL} sequential pairs, ${CLIENTS} clients × ${SECONDS} s`,
        );

        idle = await sequential(c, SEQUENTIAL);
        console.log("\n1. idle, sequential");
        console.log(line("GET /api/health", idle.health));
        console.log(line("POST /api/v1/exports → 202", idle.create));
        const gap = percentile(idle.create, 50) - percentile(idle.health, 50);
        console.log(
          `   create p50 − health p50: ${ms(gap)} (goal ≤ 3 ms); create p99 ${ms(percentile(idle.create, 99))} (goal ≤ 25 ms)`,
        );

        // 2. While the pools export: another client keeps creating exports.
        const load = calls(base, other);
        let loading = true;
        const loader = (async () => {
          let n = 0;
          while (loading) {
            await (await load.create()).arrayBuffer();
            n++;
          }
          return n;
        })();
        await new Promise((r) => setTimeout(r, 1000));
        const busy = await sequential(c, SEQUENTIAL);
        loading = false;
        const loaded = await loader;
        const ran = await q<{ n: string }>(`SELECT count(*)::text AS n FROM jobs WHERE status = 'succeeded'`);
        console.log(
          `\n2. while the worker pools export (${loaded} more exports created meanwhile; ${ran[0]!.n} succeeded so far)`,
        );
        console.log(line("GET /api/health", busy.health));
        console.log(line("POST /api/v1/exports → 202", busy.create));
        console.log(`   create p99 ${ms(percentile(busy.create, 99))} (goal ≤ 50 ms)`);

        const root = (await loadUserPrincipal(
          (await q<{ id: string }>(`SELECT id FROM users WHERE email = 'root@conveyor.test'`))[0]!.id,
        ))!;
        // 2b. A resumed backlog drains: Acme's `--backlog` exports made while it was paused, then the
        //     pause lifted; meanwhile a member of Acme creates one after the other (the creates meet
        //     the drain's admissions, its jobs ending and its quota counts). `--backlog-runs` times.
        const drained = async () =>
          (
            await q<{ n: number }>(
              `SELECT count(*)::int AS n FROM jobs WHERE status IN ('queued', 'retrying', 'running', 'scheduled')`,
            )
          )[0]!.n === 0;
        while (!(await drained())) await new Promise((r) => setTimeout(r, 200));
        const backlogP99: number[] = [];
        const backlogP50: number[] = [];
        for (let run = 0; run < BACKLOG_RUNS; run++) {
          const pause = await createPause(root, { tenant: "acme", reason: "bench:api backlog" });
          for (let i = 0; i < BACKLOG; i += 20) {
            await Promise.all(
              Array.from({ length: Math.min(20, BACKLOG - i) }, () => load.create().then((r) => r.arrayBuffer())),
            );
          }
          await resumePause(root, pause.id);
          const during: number[] = [];
          const t0 = performance.now();
          while (!(await drained())) {
            during.push(await timed(c.create, 202));
            await new Promise((r) => setTimeout(r, 20));
          }
          const s = (performance.now() - t0) / 1000;
          backlogP50.push(percentile(during, 50));
          backlogP99.push(percentile(during, 99));
          console.log(
            `\n2b. run ${run + 1}: a resumed backlog of ${BACKLOG} exports drained in ${s.toFixed(1)} s; ${during.length} creates meanwhile: p50 ${ms(percentile(during, 50))}, p99 ${ms(percentile(during, 99))}`,
          );
        }
        if (BACKLOG_RUNS > 0) {
          const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
          console.log(
            `   over ${BACKLOG_RUNS} runs: create p99 median ${ms(med(backlogP99))}, worst ${ms(Math.max(...backlogP99))} (goal ≤ 100 ms in every run: ${backlogP99.every((x) => x <= 100) ? "met" : "NOT met"}); p50 median ${ms(med(backlogP50))}`,
          );
        }

        // 3. Concurrent clients; Acme paused so that no worker competes for the cores.
        await createPause(root, { tenant: "acme", reason: "bench:api" });
        // 1 again, with nothing run after the 202: in part 1 each export created runs at once on
        // the same two cores (a worker claims it as its commit lands), here it waits, paused.
        directAccept = await acceptPath(c);
        const { k } = directAccept;
        const sql = path.join(dir, "insert.sql");
        await q(
          `CREATE TABLE IF NOT EXISTS bench_api_insert (id bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT now(), body jsonb)`,
        );
        await writeFile(sql, `INSERT INTO bench_api_insert (body) VALUES ('{"dataset":"customers"}');\n`);
        const pgb = await run("pgbench", [
          "-n",
          "-c",
          String(CLIENTS),
          "-j",
          "2",
          "-T",
          String(SECONDS),
          "-f",
          sql,
          url,
        ]);
        const tps = /tps = ([\d.]+)/.exec(pgb.stdout)?.[1];
        console.log(
          `   pgbench, ${CLIENTS} clients of single-row INSERTs into the same server: ${Number(tps).toFixed(0)} tps (creates ÷ it: ${(k.rps / Number(tps)).toFixed(3)}×)`,
        );
      } finally {
        await stopProduct(child);
      }

      // 5. The same accept path with DATABASE_URL through PgBouncer.
      if (values.pgbouncer) {
        const missing = pgbouncerMissing();
        if (missing) throw new Error(`--pgbouncer: ${missing}`);
        const bouncer = await startPgBouncer(url);
        try {
          const pooled = await startProduct(bouncer.urlFor(url), {
            DATABASE_DIRECT_URL: url,
            CONVEYOR_DATA_DIR: path.join(dir, "data"),
            ...UNLIMITED,
            LOG_LEVEL: "warn",
          });
          try {
            const c = calls(pooled.base, token);
            await sequential(c, 30); // warm-up
            console.log(
              "\n5. DATABASE_URL through PgBouncer 1.18 (transaction pooling, pool 20; statements unnamed), DATABASE_DIRECT_URL direct",
            );
            const p = await acceptPath(c);
            const d = directAccept!;
            const ratio = (x: number, y: number) => `${(x / y).toFixed(2)}×`;
            console.log("   pooled ÷ direct (parts 1b and 3 above):");
            for (const [name, px, dx] of [
              ["1b health p50", percentile(p.alone.health, 50), percentile(d.alone.health, 50)],
              ["1b create p50", percentile(p.alone.create, 50), percentile(d.alone.create, 50)],
              ["1b create p99", percentile(p.alone.create, 99), percentile(d.alone.create, 99)],
              ["3 health req/s", p.h.rps, d.h.rps],
              ["3 token list req/s", p.l.rps, d.l.rps],
              ["3 create req/s", p.k.rps, d.k.rps],
            ] as const) {
              console.log(`     ${name.padEnd(20)} ${ratio(px, dx)}`);
            }
          } finally {
            await stopProduct(pooled.child);
          }
        } finally {
          await bouncer.stop();
        }
      }

      // 4. Where a create's milliseconds go, in this process: the route handlers as Next calls them
      //    (the wrappers included, no HTTP), then a create's own steps through their lib/ functions.
      //    The HTTP figures above less the handlers' here: Next's and the loopback's share.
      const principal = (await principalFromToken(token))!;
      logger.level = "warn"; // the handlers' request lines, as on the server (LOG_LEVEL=warn above)
      const ctx = { params: Promise.resolve({}) };
      const handlerCreate = () =>
        createRoute(
          new Request("http://bench/api/v1/exports", {
            method: "POST",
            headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
            body: BODY,
          }),
          ctx,
        );
      const handlerHealth = () => healthRoute(new Request("http://bench/api/health"), ctx);
      const parts: Record<string, number[]> = {
        "handler GET /api/health": [],
        "handler POST /api/v1/exports": [],
        authenticate: [],
        validate: [],
        "create (requestExport)": [],
      };
      for (let i = 0; i < 300; i++) {
        let t = performance.now();
        await (await handlerHealth()).arrayBuffer();
        parts["handler GET /api/health"]!.push(performance.now() - t);
        t = performance.now();
        await (await handlerCreate()).arrayBuffer();
        parts["handler POST /api/v1/exports"]!.push(performance.now() - t);
        t = performance.now();
        await principalFromToken(token);
        parts.authenticate!.push(performance.now() - t);
        t = performance.now();
        exportRequestSchema.parse(JSON.parse(BODY));
        parts.validate!.push(performance.now() - t);
        t = performance.now();
        await requestExport(principal, JSON.parse(BODY));
        parts["create (requestExport)"]!.push(performance.now() - t);
      }
      const open = await q<{ n: string }>(
        `SELECT count(*)::text AS n FROM jobs WHERE status IN ('scheduled', 'queued', 'running', 'retrying')`,
      );
      console.log(
        `\n4. in this process, no HTTP (${open[0]!.n} unfinished jobs in the database; the quotas count them)`,
      );
      for (const [name, xs] of Object.entries(parts)) console.log(line(name, xs));
      const nextShare = (a: number[], b: number[]) => ms(percentile(a, 50) - percentile(b, 50));
      console.log(
        `   HTTP (part 1) less the handler, p50: health ${nextShare(idle.health, parts["handler GET /api/health"]!)}, create ${nextShare(idle.create, parts["handler POST /api/v1/exports"]!)} (Next's router, the proxy, the loopback)`,
      );
      // Before the scratch database is dropped: its connections end first.
      await closeDb();
    });
  } finally {
    await closeDb();
    await rm(dir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err: Error) => {
    console.error(err.stack ?? err.message);
    process.exit(1);
  },
);
