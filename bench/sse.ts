/**
 * npm run bench:sse [-- --clients 1000[,10000] --runs 3 --tokens 50 --writes 100 --interval-ms 50
 *                      --creates 30 --create-interval-ms 200 --server next,bare|next-piped|node
 *                      --client raw|http --per-write]
 *
 * Live progress as users get it: N concurrent SSE streams on `GET /api/v1/events`
 * (Bearer tokens, `--tokens` of them spread across the streams, all of one tenant so
 * that every stream carries every event), held by client processes of their own
 * (2,500 streams each). Then:
 *   1. progress writes: this process writes a job's progress `--writes` times (one
 *      autocommitted UPDATE each, as a worker's progress write): latency from issuing
 *      the write (its commit included) to each stream's receipt of its event;
 *   2. new jobs: `--creates` × `POST /api/v1/exports` (the public API): latency from
 *      sending the POST to each stream's first event of that job, beside the POST's own
 *      202 time.
 * Reported per run: p50, p99 and max of each over all streams, events received of
 * expected, the time to connect the streams, and the app process's RSS before the
 * streams and with them (÷ streams: memory per stream).
 *
 * `--server` names one or more servers, comma-separated, each measured in turn at every size
 * and run (all of them up for the whole benchmark); the default `next,bare` prints the ratio.
 * `next`: the product as `npm start` runs it (scripts/supervisor.ts:
 * `next start`'s handler in scripts/serve.ts, and the workers, which run the exports).
 * `bare`: the baseline, bench/sse-bare.ts: a bare node:http server, one LISTEN connection, each
 * notification written to every stream with `res.write` (no product code): the progress writes
 * only, as it has no API to create jobs with. On two cores the clients share the machine with
 * the server, so this is the floor a fan-out to N streams has here.
 * `--server next-piped`: the same with SSE_DIRECT=0, event streams through Next.js's piping of
 * the route's ReadableStream as before lib/http/sse-direct.ts (the warm-up's first stream of a
 * route goes through it on `next` too, as it loads the route).
 * `--server node`: the events and exports route handlers alone under a bare `node:http`
 * server in this process (no Next.js router, no proxy.ts; no worker), the previous
 * form of this benchmark, for comparison; it also reports the app's Postgres
 * connections with N/10 streams and with N (one LISTEN connection fans out to all).
 *
 * `--client` is how the client processes read (bench/sse-clients.ts): `raw` (the default) keeps
 * each read's bytes and time and finds the frames after the run, so that the clients, which stand
 * for browsers elsewhere, take as little of the two cores from the server as they can; `http`
 * parses every read as it comes, through node:http's client (the benchmark before 2026-12-02).
 * `--per-write` prints each progress write's own latencies (min/p50/p99/max over the streams): the
 * p99 over all receipts is the tail of the slowest writes.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { createApiTokenForEmail } from "@/lib/auth/tokens";
import { closeDb, pool } from "@/lib/db";
import { seed } from "@/prisma/seed";
import { withScratchDatabase } from "../scripts/database";
import { freePort, percentile, startProcess, startProduct, stopProcess, stopProduct } from "./harness";

const { values } = parseArgs({
  options: {
    clients: { type: "string", default: "1000" },
    runs: { type: "string", default: "1" },
    tokens: { type: "string", default: "50" },
    writes: { type: "string", default: "100" },
    "interval-ms": { type: "string", default: "50" },
    creates: { type: "string", default: "30" },
    "create-interval-ms": { type: "string", default: "200" },
    server: { type: "string", default: "next,bare" },
    "per-process": { type: "string", default: "2500" },
    client: { type: "string", default: "raw" },
    "per-write": { type: "boolean", default: false },
  },
});
const SIZES = values.clients.split(",").map(Number);
const RUNS = Number(values.runs);
const TOKENS = Number(values.tokens);
const WRITES = Number(values.writes);
const INTERVAL_MS = Number(values["interval-ms"]);
const CREATES = Number(values.creates);
const CREATE_INTERVAL_MS = Number(values["create-interval-ms"]);
const SERVERS = values.server.split(",");
const PER_PROCESS = Number(values["per-process"]);
const KINDS = ["next", "next-piped", "node", "bare"];
const CLIENT = values.client;
if (CLIENT !== "raw" && CLIENT !== "http") throw new Error("--client is raw or http");
if (!SERVERS.every((s) => KINDS.includes(s))) throw new Error(`--server is one or more of ${KINDS.join(", ")}`);

const BODY = JSON.stringify({ dataset: "customers", format: "csv" });
/** For the server (and this process, whose handlers serve `--server node`): the streams (all of one
 * user's tokens, in one tenant) must fit SSE_MAX_STREAMS and SSE_MAX_STREAMS_PER_TENANT, the tokens
 * QUOTA_TOKENS_PER_USER, and rate limits and quotas would refuse the creates. */
const SERVER_ENV = {
  SSE_MAX_STREAMS: String(Math.max(20, Math.max(...SIZES))),
  SSE_MAX_STREAMS_PER_TENANT: String(Math.max(200, Math.max(...SIZES))),
  QUOTA_TOKENS_PER_USER: String(TOKENS + 50),
  RATE_LIMIT_READS_PER_MINUTE: "0",
  RATE_LIMIT_WRITES_PER_MINUTE: "0",
  QUOTA_JOBS_PER_USER: "10000000",
  QUOTA_JOBS_PER_TENANT: "10000000",
  LOG_LEVEL: "warn",
};
Object.assign(process.env, SERVER_ENV);

const now = () => performance.timeOrigin + performance.now();
const ms = (x: number) => (Number.isNaN(x) ? "—" : `${x.toFixed(1)} ms`);

function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Number(m![1]) * 1024;
}

/** The web server's pid among the supervisor's children (scripts/serve.ts). */
async function webPid(supervisor: number): Promise<number> {
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = await readFile(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid !== supervisor) continue;
      if ((await readFile(`/proc/${entry}/cmdline`, "utf8")).includes("scripts/serve.ts")) return Number(entry);
    } catch {
      /* gone */
    }
  }
  throw new Error("web server process not found");
}

type Server = {
  kind: string;
  base: string;
  rss(): number;
  /** False for the bare server, which has no API to create jobs with. */
  creates: boolean;
  connections?(): Promise<number>;
  stop(): Promise<void>;
  /** SIGUSR2 to the web process (a CPU profile: SSE_BENCH_CPU_PROF). */
  profile?(): void;
};

async function startNext(kind: string, url: string, dir: string): Promise<Server> {
  // SSE_BENCH_CPU_PROF=<dir>: a CPU profile of the web process from the streams' connecting to the
  // last event, written there (bench/cpu-profile.cjs).
  const prof = process.env.SSE_BENCH_CPU_PROF;
  const { base, child } = await startProduct(url, {
    ...SERVER_ENV,
    SSE_DIRECT: kind === "next-piped" ? "0" : "1",
    CONVEYOR_DATA_DIR: path.join(dir, "data"),
    ...(prof ? { NODE_OPTIONS: `--require ${path.resolve("bench/cpu-profile.cjs")}`, SSE_PROF_DIR: prof } : {}),
  });
  const pid = await webPid(child.pid!);
  if (prof) console.log(`[bench:sse] web server pid ${pid}`);
  return {
    kind,
    base,
    rss: () => rssOf(pid),
    creates: true,
    stop: () => stopProduct(child),
    profile: prof ? () => process.kill(pid, "SIGUSR2") : undefined,
  };
}

/** The baseline: bench/sse-bare.ts in a process of its own, as the product's web server is. */
async function startBare(url: string): Promise<Server> {
  const port = await freePort();
  const child = await startProcess(["bench/sse-bare.ts"], { DATABASE_URL: url, PORT: String(port) }, /listening/);
  return {
    kind: "bare",
    base: `http://127.0.0.1:${port}`,
    rss: () => rssOf(child.pid!),
    creates: false,
    stop: () => stopProcess(child),
  };
}

/** The route handlers alone under node:http in this process: GET /api/v1/events, POST /api/v1/exports. */
async function startNode(dbName: string): Promise<Server> {
  await import("@/lib/workloads");
  // The server's request log lines (LOG_LEVEL above is read before this process could set it).
  (await import("@/lib/log")).logger.level = "warn";
  const { GET: events } = await import("@/app/api/v1/events/route");
  const { POST: exportsPost } = await import("@/app/api/v1/exports/route");
  const body = async (req: IncomingMessage) => {
    const parts: Buffer[] = [];
    for await (const p of req) parts.push(p as Buffer);
    return Buffer.concat(parts);
  };
  const server = createServer((req, res) => {
    const abort = new AbortController();
    res.on("close", () => abort.abort());
    const handler =
      req.method === "GET" && req.url === "/api/v1/events" ? events : req.method === "POST" ? exportsPost : null;
    if (!handler) {
      res.writeHead(404).end();
      return;
    }
    (async () => {
      const request = new Request(`http://bench${req.url}`, {
        method: req.method,
        headers: Object.entries(req.headers).flatMap(([k, v]): [string, string][] =>
          typeof v === "string" ? [[k, v]] : [],
        ),
        body: req.method === "POST" ? await body(req) : undefined,
        signal: abort.signal,
      });
      const response = await handler(request, { params: Promise.resolve({}) });
      res.writeHead(response.status, Object.fromEntries(response.headers));
      if (response.body) Readable.fromWeb(response.body as never).pipe(res);
      else res.end();
    })().catch((e: Error) => {
      res.writeHead(500);
      res.end(e.message);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    kind: "node",
    base: `http://127.0.0.1:${port}`,
    rss: () => process.memoryUsage().rss,
    creates: true,
    // Every connection of this process to the bench database but the one asking.
    connections: async () =>
      (
        await pool().query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`,
          [dbName],
        )
      ).rows[0]!.n,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

type Clients = { procs: ChildProcess[]; files: string[] };

/** `n` streams in client processes of PER_PROCESS each; resolves once all are open. */
async function openStreams(base: string, tokens: string[], n: number, dir: string): Promise<Clients> {
  const procs: ChildProcess[] = [];
  const files: string[] = [];
  const ready: Promise<void>[] = [];
  for (let offset = 0, k = 0; offset < n; offset += PER_PROCESS, k++) {
    const count = Math.min(PER_PROCESS, n - offset);
    const file = path.join(dir, `receipts-${k}.txt`);
    const child = spawn(process.execPath, ["--import", "tsx", "bench/sse-clients.ts"], {
      env: {
        ...process.env,
        SSE_URL: `${base}/api/v1/events`,
        SSE_TOKENS: tokens.join(","),
        SSE_CLIENTS: String(count),
        SSE_OFFSET: String(offset),
        SSE_OUT: file,
        SSE_CLIENT: CLIENT,
      },
      stdio: ["ignore", "pipe", "inherit"],
    });
    procs.push(child);
    files.push(file);
    ready.push(
      new Promise((resolve, reject) => {
        let out = "";
        child.stdout!.on("data", (d: Buffer) => {
          out += d.toString();
          if (out.includes(`connected ${count}\n`)) resolve();
        });
        child.once("exit", (code) => reject(new Error(`sse-clients exited ${code} before connecting`)));
      }),
    );
  }
  await Promise.all(ready);
  return { procs, files };
}

/** Every receipt of every client process: "<job> <seq> <epoch ms>" lines, then the processes end. */
async function collect(c: Clients): Promise<string[]> {
  await Promise.all(
    c.procs.map(
      (child) =>
        new Promise<void>((resolve) => {
          let out = "";
          child.stdout!.removeAllListeners("data");
          child.stdout!.on("data", (d: Buffer) => {
            out += d.toString();
            if (out.includes("END\n")) resolve();
          });
          child.kill("SIGUSR2");
        }),
    ),
  );
  const lines: string[] = [];
  for (const f of c.files) for (const l of (await readFile(f, "utf8")).split("\n")) if (l) lines.push(l);
  await Promise.all(
    c.procs.map(
      (child) =>
        new Promise<void>((resolve) => {
          child.removeAllListeners("exit");
          if (child.exitCode !== null) return resolve();
          child.once("exit", () => resolve());
          child.kill("SIGTERM");
        }),
    ),
  );
  return lines;
}

type Row = {
  server: string;
  clients: number;
  connectMs: number;
  write: { p50: number; p99: number; max: number; received: number; expected: number; roundTrip: number };
  create: { p50: number; p99: number; max: number; received: number; expected: number; post202: number };
  rssBefore: number;
  rssWith: number;
  connections?: string;
};

async function oneRun(server: Server, tokens: string[], probeJob: string, n: number, dir: string): Promise<Row> {
  const rssBefore = server.rss();
  let connections: string | undefined;
  if (server.connections) {
    const few = Math.max(1, Math.round(n / 10));
    const c = await openStreams(server.base, tokens, few, dir);
    await sleep(300);
    connections = `${await server.connections()}`;
    await collect(c);
  }
  const t = Date.now();
  server.profile?.();
  const clients = await openStreams(server.base, tokens, n, dir);
  const connectMs = Date.now() - t;
  await sleep(1_000);
  const rssWith = server.rss();
  if (server.connections) connections += ` → ${await server.connections()}`;

  // 1. Progress writes of one job, as a worker writes them.
  const writeSent = new Map<number, number>();
  const roundTrips: number[] = [];
  for (let i = 1; i <= WRITES; i++) {
    const t0 = now();
    const { rows } = await pool().query<{ seq: number }>(
      "UPDATE jobs SET progress_done = progress_done + 1, updated_at = now() WHERE id = $1 RETURNING seq",
      [probeJob],
    );
    roundTrips.push(now() - t0);
    writeSent.set(rows[0]!.seq, t0);
    await sleep(INTERVAL_MS);
  }

  // 2. New jobs through the public API.
  const createSent = new Map<string, number>();
  const post202: number[] = [];
  for (let i = 0; i < (server.creates ? CREATES : 0); i++) {
    const t0 = now();
    const res = await fetch(`${server.base}/api/v1/exports`, {
      method: "POST",
      headers: { Authorization: `Bearer ${tokens[i % tokens.length]}`, "Content-Type": "application/json" },
      body: BODY,
    });
    const job = (await res.json()) as { id: string };
    post202.push(now() - t0);
    if (res.status !== 202) throw new Error(`POST /api/v1/exports: ${res.status} ${JSON.stringify(job)}`);
    createSent.set(job.id, t0);
    await sleep(CREATE_INTERVAL_MS);
  }
  await sleep(1_000);
  server.profile?.();
  const lines = await collect(clients);

  const writeLat: number[] = [];
  // A new job's first event is its lowest seq received anywhere; each stream's receipt of it counts.
  const firstSeq = new Map<string, number>();
  for (const l of lines) {
    const [job, seqS] = l.split(" ");
    if (!createSent.has(job!)) continue;
    const seq = Number(seqS);
    if (seq < (firstSeq.get(job!) ?? Infinity)) firstSeq.set(job!, seq);
  }
  const createLat: number[] = [];
  // Each progress write's latencies, by its seq (`--per-write`).
  const perWrite = new Map<number, number[]>();
  for (const l of lines) {
    const [job, seqS, atS] = l.split(" ");
    const seq = Number(seqS);
    const at = Number(atS);
    if (job === probeJob) {
      const t0 = writeSent.get(seq);
      if (t0 === undefined) continue;
      writeLat.push(at - t0);
      if (!perWrite.has(seq)) perWrite.set(seq, []);
      perWrite.get(seq)!.push(at - t0);
    } else if (firstSeq.get(job!) === seq) {
      createLat.push(at - createSent.get(job!)!);
    }
  }
  if (values["per-write"])
    console.log(
      `${server.kind}, ${n} streams, each write's seq: min/p50/p99/max ms: ` +
        [...perWrite.entries()]
          .sort((a, b) => a[0] - b[0])
          .map(
            ([s, xs]) =>
              `${s}: ${percentile(xs, 0).toFixed(0)}/${percentile(xs, 50).toFixed(0)}/${percentile(xs, 99).toFixed(0)}/${percentile(xs, 100).toFixed(0)}`,
          )
          .join("  "),
    );
  const stats = (xs: number[]) => ({
    p50: percentile(xs, 50),
    p99: percentile(xs, 99),
    max: xs.length ? xs.reduce((a, b) => Math.max(a, b), 0) : NaN,
  });
  return {
    server: server.kind,
    clients: n,
    connectMs,
    write: {
      ...stats(writeLat),
      received: writeLat.length,
      expected: n * WRITES,
      roundTrip: percentile(roundTrips, 50),
    },
    create: {
      ...stats(createLat),
      received: createLat.length,
      expected: server.creates ? n * CREATES : 0,
      post202: percentile(post202, 50),
    },
    rssBefore,
    rssWith,
    connections,
  };
}

const mb = (b: number) => `${(b / 1024 / 1024).toFixed(0)} MB`;
/** RSS with the streams less before them, per stream: only a server's first run at a size says it
 * (a later run's "before" still holds the heap the previous run grew, which a GC may then return). */
const perStream = (r: Row) => (r.rssWith - r.rssBefore) / r.clients;

function printRow(r: Row, run: number): void {
  console.log(
    `| ${r.server} | ${r.clients} | ${run} | ${ms(r.write.p50)} | ${ms(r.write.p99)} | ${ms(r.write.max)} | ${r.write.received} of ${r.write.expected} | ${r.write.roundTrip.toFixed(2)} ms | ${ms(r.create.p50)} | ${ms(r.create.p99)} | ${ms(r.create.max)} | ${r.create.received} of ${r.create.expected} | ${ms(r.create.post202)} | ${(r.connectMs / 1000).toFixed(1)} s | ${mb(r.rssBefore)} → ${mb(r.rssWith)} (${((r.rssWith - r.rssBefore) / r.clients / 1024).toFixed(1)} kB/stream) |${r.connections ? ` ${r.connections} |` : ""}`,
  );
}

async function main() {
  const dir = await mkdtemp(path.join(tmpdir(), "bench-sse-"));
  try {
    await withScratchDatabase("conveyor_bench_sse", async ({ url, name }) => {
      await seed(0.001);
      const tokens: string[] = [];
      for (let i = 0; i < TOKENS; i++)
        tokens.push(await createApiTokenForEmail("ada@acme.test", `bench:sse ${i}`, "acme"));
      const { rows } = await pool().query<{ id: string }>(
        `INSERT INTO jobs (id, tenant_id, type, queue, status, input, input_hash, run_at, updated_at, started_at)
         SELECT gen_random_uuid(), id, 'probe', 'bulk', 'scheduled', '{}', 'bench-sse', now() + interval '1 day', now(), now()
         FROM tenants WHERE slug = 'acme' RETURNING id`,
      );
      const probeJob = rows[0]!.id;
      const servers: Server[] = [];
      try {
        for (const kind of SERVERS) {
          const server =
            kind === "node"
              ? await startNode(name)
              : kind === "bare"
                ? await startBare(url)
                : await startNext(kind, url, dir);
          servers.push(server);
          // Warm-up: the routes compiled and loaded, the pools open, the LISTEN in place.
          const warm = await openStreams(server.base, tokens, 20, dir);
          for (let i = 0; i < (server.creates ? 5 : 0); i++) {
            await fetch(`${server.base}/api/v1/exports`, {
              method: "POST",
              headers: { Authorization: `Bearer ${tokens[0]}`, "Content-Type": "application/json" },
              body: BODY,
            }).then((r) => r.arrayBuffer());
          }
          await collect(warm);
        }
        await sleep(2_000);
        const pgColumn = servers.some((s) => s.connections);
        console.log(
          `bench:sse — ${new Date().toISOString()}, servers ${SERVERS.join(", ")}, ${CLIENT} clients, ${TOKENS} tokens, ${WRITES} progress writes ${INTERVAL_MS} ms apart, ${CREATES} creates ${CREATE_INTERVAL_MS} ms apart`,
        );
        console.log("");
        console.log(
          `| server | streams | run | write → event p50 | p99 | max | received | write round trip p50 | POST → first event p50 | p99 | max | received | POST → 202 p50 | connect | app RSS before → with streams |${pgColumn ? " app PG connections (N/10 → N streams) |" : ""}`,
        );
        console.log(`|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|${pgColumn ? "---|" : ""}`);
        const rows: Row[] = [];
        for (let run = 1; run <= RUNS; run++) {
          for (const n of SIZES) {
            for (const server of servers) {
              const r = await oneRun(server, tokens, probeJob, n, dir);
              rows.push(r);
              printRow(r, run);
              await sleep(2_000);
            }
          }
        }
        console.log("");
        for (const n of SIZES)
          for (const kind of SERVERS) {
            const mine = rows.filter((r) => r.clients === n && r.server === kind);
            const med = (f: (r: Row) => number) => percentile(mine.map(f), 50);
            const goal =
              kind === "bare"
                ? { p50: Infinity, p99: Infinity }
                : n <= 1000
                  ? { p50: 20, p99: 100 }
                  : { p50: Infinity, p99: 250 };
            const wp50 = med((r) => r.write.p50);
            const wp99 = med((r) => r.write.p99);
            const cp50 = med((r) => r.create.p50);
            const cp99 = med((r) => r.create.p99);
            const ok = (x: number, g: number) => (g === Infinity ? "" : x <= g ? " ✔" : " ✘");
            const creates = mine[0]!.create.expected
              ? `; POST → first event p50 ${ms(cp50)}${ok(cp50, goal.p50)}, p99 ${ms(cp99)}${ok(cp99, goal.p99)} (POST → 202 p50 ${ms(med((r) => r.create.post202))})`
              : "";
            console.log(
              `[bench:sse] ${kind}, ${n} streams, median of ${mine.length}: write → event p50 ${ms(wp50)}${ok(wp50, goal.p50)}, p99 ${ms(wp99)}${ok(wp99, goal.p99)}${creates}; memory ${(perStream(mine[0]!) / 1024).toFixed(1)} kB/stream (first run)`,
            );
          }
        // Against the baseline: each server's medians ÷ the bare server's (1.0× is as fast as bare Node).
        if (SERVERS.includes("bare")) {
          for (const n of SIZES) {
            const med = (kind: string, f: (r: Row) => number) =>
              percentile(rows.filter((r) => r.clients === n && r.server === kind).map(f), 50);
            for (const kind of SERVERS.filter((k) => k !== "bare")) {
              const ratio = (f: (r: Row) => number) => `${(med(kind, f) / med("bare", f)).toFixed(2)}×`;
              const first = (kind: string) => perStream(rows.find((r) => r.clients === n && r.server === kind)!);
              console.log(
                `[bench:sse] ${n} streams, ${kind} ÷ bare (medians): write → event p50 ${ratio((r) => r.write.p50)}, p99 ${ratio((r) => r.write.p99)}, max ${ratio((r) => r.write.max)}; memory per stream ${(first(kind) / first("bare")).toFixed(2)}× (first runs)`,
              );
            }
          }
        }
      } finally {
        for (const server of servers) await server.stop();
      }
      await sleep(500); // the streams' slots released
      await closeDb();
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err: Error) => {
    console.error(`[bench:sse] failed: ${err.stack ?? err.message}`);
    process.exit(1);
  },
);
