/**
 * npm run bench:sse [-- --clients 1000 --writes 100 --interval-ms 50]
 *
 * One app process serves `GET /api/v1/events` (the real route handler, with
 * Bearer-token authentication, under node:http) to N concurrent SSE clients
 * held by a second process. This process then writes job progress (one UPDATE
 * per write, autocommitted) and every client records when each write's event
 * arrives. Reported: latency from issuing the write (its commit included) to
 * receipt, p50 and p99 over all clients and writes, with the write's own round
 * trip as the baseline; and the app's Postgres connections (pg_stat_activity)
 * with N/10 clients and with N: they must not grow with the clients (one
 * LISTEN connection per process fans out to all; requests share the pool).
 */
import { createServer } from "node:http";
import { Readable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import type { AddressInfo } from "node:net";
import { GET as events } from "@/app/api/v1/events/route";
import { createApiTokenForEmail } from "@/lib/auth/tokens";
import { pool } from "@/lib/db";
import { sseStats } from "@/lib/sse/streams";
import { seed } from "@/prisma/seed";
import { withScratchDatabase } from "../scripts/database";
import { percentile, startProcess, stopProcess } from "./harness";
import "@/lib/workloads";

const { values } = parseArgs({
  options: {
    clients: { type: "string", default: "1000" },
    writes: { type: "string", default: "100" },
    "interval-ms": { type: "string", default: "50" },
  },
});
const clients = Number(values.clients);
const writes = Number(values.writes);
const intervalMs = Number(values["interval-ms"]);

async function appConnections(dbName: string): Promise<number> {
  // Every connection of this process to the bench database but the one asking.
  const { rows } = await pool().query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`,
    [dbName],
  );
  return rows[0]!.n;
}

async function main() {
  await withScratchDatabase("conveyor_bench_sse", async ({ name }) => {
    await seed(0.001);
    const token = await createApiTokenForEmail("ada@acme.test", "bench:sse", "acme");
    const { rows } = await pool().query<{ id: string }>(
      `INSERT INTO jobs (id, tenant_id, type, queue, status, input, input_hash, run_at, updated_at, started_at)
       SELECT gen_random_uuid(), id, 'probe', 'bulk', 'scheduled', '{}', 'bench-sse', now() + interval '1 day', now(), now()
       FROM tenants WHERE slug = 'acme' RETURNING id`,
    );
    const jobId = rows[0]!.id;

    const server = createServer((req, res) => {
      const request = new Request(`http://bench${req.url}`, {
        headers: Object.entries(req.headers).flatMap(([k, v]): [string, string][] =>
          typeof v === "string" ? [[k, v]] : [],
        ),
      });
      const abort = new AbortController();
      res.on("close", () => abort.abort());
      const withSignal = new Request(request, { signal: abort.signal });
      events(withSignal, { params: Promise.resolve({}) })
        .then((response) => {
          res.writeHead(response.status, Object.fromEntries(response.headers));
          if (response.body) Readable.fromWeb(response.body as never).pipe(res);
          else res.end();
        })
        .catch((e: Error) => {
          res.writeHead(500);
          res.end(e.message);
        });
    });
    server.maxConnections = clients + 100;
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as AddressInfo).port;

    // A tenth of the clients first: the app's connections with that many subscribers
    // (the pool grows to its maximum while they authenticate at once, then stays).
    const few = Math.max(1, Math.round(clients / 10));
    const one = await startProcess(
      ["bench/sse-clients.ts"],
      { SSE_URL: `http://127.0.0.1:${port}/api/v1/events`, SSE_TOKEN: token, SSE_CLIENTS: String(few) },
      new RegExp(`connected ${few}\\b`),
    );
    await sleep(300);
    const withFew = await appConnections(name);
    await stopProcess(one);

    const started = Date.now();
    const many = await startProcess(
      ["bench/sse-clients.ts"],
      { SSE_URL: `http://127.0.0.1:${port}/api/v1/events`, SSE_TOKEN: token, SSE_CLIENTS: String(clients) },
      new RegExp(`connected ${clients}\\b`),
    );
    console.log(`[bench:sse] ${clients} clients connected in ${Date.now() - started} ms`);
    await sleep(500);
    const withMany = await appConnections(name);

    // The writes: progress of one job of the tenant, every client's stream carries each.
    const sentAt = new Map<number, number>();
    const roundTrips: number[] = [];
    for (let i = 1; i <= writes; i++) {
      const t0 = performance.timeOrigin + performance.now();
      const { rows: r } = await pool().query<{ seq: number }>(
        "UPDATE jobs SET progress_done = $2, updated_at = now() WHERE id = $1 RETURNING seq",
        [jobId, i],
      );
      roundTrips.push(performance.timeOrigin + performance.now() - t0);
      sentAt.set(r[0]!.seq, t0);
      await sleep(intervalMs);
    }
    await sleep(1_000);
    // The clients report what they received: seq → receipt times.
    const report = await new Promise<string>((resolve) => {
      let out = "";
      many.stdout!.removeAllListeners("data");
      many.stdout!.on("data", (d: Buffer) => {
        out += d.toString();
        if (out.includes("\nEND\n")) resolve(out);
      });
      many.kill("SIGUSR2");
    });
    await stopProcess(many);
    server.close();

    const latencies: number[] = [];
    let received = 0;
    for (const line of report.split("\n")) {
      const [seq, at] = line.split(" ").map(Number);
      if (!seq || !at) continue;
      const t0 = sentAt.get(seq);
      if (t0 === undefined) continue;
      received++;
      latencies.push(at - t0);
    }
    const expected = clients * writes;
    const p50 = percentile(latencies, 50);
    const p99 = percentile(latencies, 99);
    console.log("");
    console.log(
      `| clients | writes | events received | p50 | p99 | max | write round trip p50 | app PG connections (${few} clients → ${clients}) | coalesced | dropped |`,
    );
    console.log("|---|---|---|---|---|---|---|---|---|---|");
    console.log(
      `| ${clients} | ${writes} | ${received} of ${expected} | ${p50.toFixed(1)} ms | ${p99.toFixed(1)} ms | ${Math.max(...latencies).toFixed(1)} ms | ${percentile(roundTrips, 50).toFixed(2)} ms | ${withFew} → ${withMany} | ${sseStats.coalesced} | ${sseStats.dropped} |`,
    );
    console.log("");
    console.log(
      `[bench:sse] goals: p50 ≤ 20 ms ${p50 <= 20 ? "✔" : "✘"}, p99 ≤ 100 ms ${p99 <= 100 ? "✔" : "✘"}, connections flat ${withMany <= withFew ? "✔" : "✘"} (pool max ${pool().options.max} + 1 LISTEN)`,
    );
  });
}

main().catch((err: Error) => {
  console.error(`[bench:sse] failed: ${err.stack ?? err.message}`);
  process.exit(1);
});
