/**
 * npm run bench:capacity [-- --only all|concurrency|throughput --paths bare,webhooks,probe
 *   --rate 100 --delay-ms 10000 --rates 100,250,500 --throughput-delay-ms 2000 --seconds 30
 *   --drain-seconds 60 --tenants 5 --endpoints 20 --endpoint-rate 100 --env KEY=VALUE …]
 *
 * The seeds' sizing example as a benchmark (issue 34): "required_concurrency ≈ arrival_rate ×
 * avg_runtime × retry_factor × headroom; e.g. 500 jobs/sec × 2s × 1.3 ≈ 1,300 concurrent executions"
 * (seeds, async-jobs-and-workers). Through the path users take: the server `npm start` runs
 * (scripts/supervisor.ts: web server and a worker pool per queue) on a scratch database, at default
 * settings but for WEBHOOK_ALLOW_PRIVATE=1 (a receiver on the loopback) and the API's per-member limits
 * off (RATE_LIMIT_*=0, WEB_USER_CONCURRENCY=0: 20–100 sends a second from each of five members are not
 * what they are for; with them, 250/s between five members met 429s); `--env KEY=VALUE`
 * (repeatable) sets more, for the product and for the limits this script prints.
 *
 * `--tenants` tenants (a member each, a token each) with `--endpoints` endpoints between them
 * (`rateLimitPerSecond: --endpoint-rate`), all pointing at one slow receiver (bench/capacity-receiver.ts,
 * a process of its own) that answers 200 after the phase's delay. Each phase offers messages at a fixed
 * rate for `--seconds` (open loop: a send does not wait for the one before), then waits for them
 * (at most the delay + `--drain-seconds`), then ends what is left so the next phase starts clean.
 * Three paths, each a phase:
 *   bare      a bare Node client POSTs to the receiver itself (no product): the baseline, the same
 *             rate and delay. Its in-flight and lag are what this machine and receiver can do.
 *   webhooks  POST /api/v1/webhooks/endpoints/{id}/test (a `ping` message, 202) round-robin over the
 *             endpoints; start lag = the receiver's first sight of the message's `webhook-id` − the
 *             message's created_at (the server's clock, the same machine's).
 *   probe     the engine alone: a task that waits without a network call. The `probe` task (lib/probe)
 *             sleeps `sleepMs`; it is internal (never through the API), so it is enqueued in this
 *             process (enqueueJob, as bench:webhooks does), round-robin over the tenants. Start lag =
 *             its first attempt's start − the job's creation; in flight = jobs running (sampled).
 * Part 1, concurrency: `--rate` (100/s) with `--delay-ms` (10 s); goal ≥ 1,000 in flight, start lag
 * p95 ≤ 1 s, p99 ≤ 2 s. Part 2, throughput: each of `--rates` with `--throughput-delay-ms` (2 s).
 *
 * Printed per phase: the formula's prediction (rate × runtime × 1.3), in flight (peak, and the
 * median once the first answers come back while the rate is still offered), start lag p50/p95/p99 over
 * every message offered (a message not delivered by the end counts as later than any delivered one:
 * "not delivered"), delivered / expected, duplicates (a second request with the same webhook-id) and
 * strangers (a webhook-id never sent: a duplicate under another id would be one), the measured retry
 * factor (requests per message delivered), Postgres connections to the scratch database (peak,
 * sampled each second, this script's own pool included), each worker pool's RSS (peak, sampled each
 * second), CPU by process while the rate was offered (cores: seconds used per second), and
 * transactions and rows written per message (pg_stat_database, pg_stat_user_tables; Postgres here
 * has no pg_stat_statements to count statements).
 */
import http from "node:http";
import { once } from "node:events";
import { mkdtemp } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import type { ChildProcess } from "node:child_process";
import { createApiTokenForEmail } from "@/lib/auth/tokens";
import { pool } from "@/lib/db";
import { env, resetEnvCache } from "@/lib/env";
import { enqueueJob } from "@/lib/jobs/enqueue";
import { requestCancel } from "@/lib/jobs/transitions";
import { webhookSettings } from "@/lib/webhooks/settings";
import "@/lib/workloads";
import { withScratchDatabase } from "../scripts/database";
import type { ReceiverTake } from "./capacity-receiver";
import {
  cpuSeconds,
  freePort,
  machineBusySeconds,
  percentile,
  productProcesses,
  q,
  rssMb,
  startProcess,
  startProduct,
  stopProcess,
  stopProduct,
} from "./harness";

const { values } = parseArgs({
  options: {
    only: { type: "string", default: "all" },
    paths: { type: "string", default: "bare,webhooks,probe" },
    rate: { type: "string", default: "100" },
    "delay-ms": { type: "string", default: "10000" },
    rates: { type: "string", default: "100,250,500" },
    "throughput-delay-ms": { type: "string", default: "2000" },
    seconds: { type: "string", default: "30" },
    "drain-seconds": { type: "string", default: "60" },
    tenants: { type: "string", default: "5" },
    endpoints: { type: "string", default: "20" },
    "endpoint-rate": { type: "string", default: "100" },
    env: { type: "string", multiple: true, default: [] },
  },
});
const PATHS = values.paths!.split(",") as Path[];
const SECONDS = Number(values.seconds);
const DRAIN_S = Number(values["drain-seconds"]);
const TENANTS = Number(values.tenants);
const ENDPOINTS = Number(values.endpoints);
/** The seeds' retry factor (their headroom is not given a figure: 1 here). */
const RETRY_FACTOR = 1.3;
/** The most sends of one phase outstanding at once (open loop, but not without bound). */
const MAX_OUTSTANDING = 5_000;
/** The worker pool's slots each path runs in (set from the settings in force): a ceiling on its in-flight. */
const poolSlots: Partial<Record<Path, number>> = {};

type Path = "bare" | "webhooks" | "probe";
type Offered = { sentAt: number; acceptedAt: number | null; id: string | null; error: string | null };
type Result = {
  part: string;
  path: Path;
  rate: number;
  delayMs: number;
  offered: number;
  accepted: number;
  acceptRate: number;
  startedPerSecond: number;
  inflightPeak: number;
  inflightSteady: number;
  lag: { p50: number; p95: number; p99: number };
  /** The same over the messages delivered (started) only. */
  lagDelivered: { p50: number; p95: number; p99: number };
  delivered: number;
  duplicates: number;
  strangers: number;
  retryFactor: number;
  runsPerMessage: number | null;
  pgPeak: number;
  rssPeak: Map<string, number>;
  cores: Map<string, number>;
  txPerMessage: number | null;
  rowsPerMessage: string;
  load: string;
};

const fmtMs = (x: number) => (Number.isFinite(x) ? `${Math.round(x).toLocaleString("en")} ms` : "not delivered");
const int = (x: number) => Math.round(x).toLocaleString("en");
const median = (xs: number[]) => percentile(xs, 50);
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(" / ");

/** Offers `rate`/s for `seconds` (open loop): `send(i)` for each, not waiting for the one before. */
async function offer(rate: number, seconds: number, send: (i: number) => Promise<void>) {
  const n = Math.round(rate * seconds);
  const t0 = performance.now();
  let outstanding = 0;
  let held = 0;
  const all: Promise<void>[] = [];
  for (let i = 0; i < n; i++) {
    const wait = t0 + (i * 1000) / rate - performance.now();
    if (wait > 0) await sleep(wait);
    while (outstanding >= MAX_OUTSTANDING) {
      held++;
      await sleep(5);
    }
    outstanding++;
    all.push(send(i).finally(() => outstanding--));
  }
  const offeredFor = (performance.now() - t0) / 1000;
  return { n, offeredFor, held, done: Promise.all(all) };
}

/** The receiver process: its URL, and what it saw since the last take. */
async function startReceiver(delayMs: number) {
  const port = await freePort();
  const child = await startProcess(["bench/capacity-receiver.ts", String(port), String(delayMs)], {}, /listening/);
  return {
    child,
    url: `http://127.0.0.1:${port}`,
    setDelay: (ms: number) => child.send({ delayMs: ms }),
    take: async (): Promise<ReceiverTake> => {
      const answer = once(child, "message");
      child.send({ take: true });
      return (await answer)[0] as ReceiverTake;
    },
  };
}

/** Samples once a second: Postgres connections to the database, worker RSS, Postgres backends' pids, and `extra`. */
function sampler(dbName: string, root: number | null, extra?: () => Promise<number>) {
  let on = true;
  let pgPeak = 0;
  const rssPeak = new Map<string, number>();
  const pgPids = new Set<number>();
  const extras: { at: number; n: number }[] = [];
  const done = (async () => {
    while (on) {
      const rows = await q<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE datname = $1`, [dbName]);
      pgPeak = Math.max(pgPeak, rows.length);
      for (const r of rows) pgPids.add(r.pid);
      if (root) {
        for (const p of productProcesses(root)) {
          const mb = rssMb(p.pid);
          if (mb !== null) rssPeak.set(p.role, Math.max(rssPeak.get(p.role) ?? 0, mb));
        }
      }
      if (extra) extras.push({ at: Date.now(), n: await extra() });
      await sleep(1000);
    }
  })();
  return {
    pgPids,
    stop: async () => {
      on = false;
      await done;
      return { pgPeak, rssPeak, extras };
    },
  };
}

/** CPU seconds so far by role: this script, the receiver, the product's processes, Postgres backends of the database. */
function cpuSnapshot(receiver: ChildProcess, root: number | null, pgPids: Set<number>) {
  const byPid = new Map<number, { role: string; used: number }>();
  const add = (pid: number, role: string) => {
    const used = cpuSeconds(pid);
    if (used !== null) byPid.set(pid, { role, used });
  };
  add(process.pid, "client (this script)");
  add(receiver.pid!, "receiver");
  if (root) for (const p of productProcesses(root)) add(p.pid, p.role);
  for (const pid of pgPids) add(pid, "postgres (this database)");
  return { byPid, machine: machineBusySeconds(), at: performance.now() };
}
type CpuSnap = ReturnType<typeof cpuSnapshot>;

/** Cores used by role between two snapshots (a Postgres backend first seen after `before` counts from 0). */
function coresBetween(before: CpuSnap, after: CpuSnap): Map<string, number> {
  const wall = (after.at - before.at) / 1000;
  const roles = new Map<string, number>();
  for (const [pid, { role, used }] of after.byPid) {
    roles.set(role, (roles.get(role) ?? 0) + (used - (before.byPid.get(pid)?.used ?? 0)) / wall);
  }
  roles.set("machine (everything, other work too)", (after.machine - before.machine) / wall);
  return roles;
}

/** The database's transaction count and rows written per table so far. */
async function pgCounters(dbName: string) {
  const [d] = await q<{ tx: string }>(
    `SELECT (xact_commit + xact_rollback)::text AS tx FROM pg_stat_database WHERE datname = $1`,
    [dbName],
  );
  const tables = await q<{ name: string; n: string }>(
    `SELECT relname AS name, (n_tup_ins + n_tup_upd + n_tup_del)::text AS n FROM pg_stat_user_tables`,
  );
  return { tx: Number(d!.tx), tables: new Map(tables.map((t) => [t.name, Number(t.n)])) };
}
async function pgPerMessage(dbName: string, before: Awaited<ReturnType<typeof pgCounters>>, messages: number) {
  await sleep(11_000); // an idle backend reports its counters up to 10 s late (Postgres 15)
  const after = await pgCounters(dbName);
  if (!messages) return { tx: null, rows: "—" };
  const rows = [...after.tables]
    .map(([name, n]) => ({ name, n: (n - (before.tables.get(name) ?? 0)) / messages }))
    .filter((r) => r.n >= 0.05)
    .sort((a, b) => b.n - a.n);
  return {
    tx: (after.tx - before.tx) / messages,
    rows: rows
      .slice(0, 8)
      .map((r) => `${r.name} ${r.n.toFixed(1)}`)
      .join(", "),
  };
}

/** Lag percentiles over every offered message: undelivered ones as later than any delivered. */
function lagStats(lags: number[], undelivered: number) {
  const all = [...lags, ...Array<number>(Math.max(0, undelivered)).fill(Infinity)];
  return { p50: percentile(all, 50), p95: percentile(all, 95), p99: percentile(all, 99) };
}

/** In flight: the peak, and the median from the first answers due until the rate stops being offered. */
function inflight(samples: { at: number; n: number }[], t0: number, delayMs: number, seconds: number) {
  const steady = samples.filter((s) => s.at >= t0 + delayMs && s.at <= t0 + seconds * 1000).map((s) => s.n);
  return {
    peak: Math.max(0, ...samples.map((s) => s.n)),
    steady: steady.length ? median(steady) : NaN,
  };
}

async function main(): Promise<void> {
  const extraEnv: Record<string, string> = {
    WEBHOOK_ALLOW_PRIVATE: "1",
    RATE_LIMIT_READS_PER_MINUTE: "0",
    RATE_LIMIT_WRITES_PER_MINUTE: "0",
    // Nor the web server's turn-taking per user (2 running, 200 waiting, then 429): five members
    // sending 250/s between them are refused by it, not by the delivery path measured here.
    WEB_USER_CONCURRENCY: "0",
    // Errors only: a deferred delivery (an endpoint at its in-flight limit) is a warning, thousands a phase.
    LOG_LEVEL: "error",
  };
  for (const kv of values.env!) {
    const at = kv.indexOf("=");
    if (at < 1) throw new Error(`--env wants KEY=VALUE, not ${kv}`);
    extraEnv[kv.slice(0, at)] = kv.slice(at + 1);
  }
  // The same settings here, so the limits printed are the product's.
  Object.assign(process.env, extraEnv);
  resetEnvCache();
  const w = webhookSettings();
  const e = env();
  poolSlots.webhooks = w.WEBHOOK_CONCURRENCY;
  poolSlots.probe = e.WORKER_CONCURRENCY;
  console.log(`bench:capacity — ${new Date().toISOString()}, load average ${load()} (1 / 5 / 15 min)`);
  console.log(
    `settings: WEBHOOK_CONCURRENCY ${w.WEBHOOK_CONCURRENCY}, QUEUE_WEBHOOKS_WINDOW ${w.QUEUE_WEBHOOKS_WINDOW}, ` +
      `QUEUE_WEBHOOKS_TENANT_CAP ${w.QUEUE_WEBHOOKS_TENANT_CAP}, WEBHOOK_ENDPOINT_CONCURRENCY ${w.WEBHOOK_ENDPOINT_CONCURRENCY} ` +
      `(AIMD: an answer slower than WEBHOOK_SLOW_MS ${w.WEBHOOK_SLOW_MS} ms halves an endpoint's limit, down to 1), ` +
      `WEBHOOK_TIMEOUT_MS ${w.WEBHOOK_TIMEOUT_MS}; bulk (probe): WORKER_CONCURRENCY ${e.WORKER_CONCURRENCY}, ` +
      `QUEUE_BULK_WINDOW ${e.QUEUE_BULK_WINDOW}, QUEUE_BULK_TENANT_CAP ${e.QUEUE_BULK_TENANT_CAP}`,
  );
  console.log(
    `product env beyond the defaults: ${Object.entries(extraEnv)
      .map(([k, v]) => `${k}=${v}`)
      .join(" ")}`,
  );
  console.log(
    `${TENANTS} tenants, ${ENDPOINTS} endpoints (rateLimitPerSecond ${values["endpoint-rate"]}), ` +
      `${SECONDS} s offered per phase, drain ≤ delay + ${DRAIN_S} s`,
  );

  const receiver = await startReceiver(Number(values["delay-ms"]));
  const dataDir = await mkdtemp(path.join(tmpdir(), "conveyor-bench-capacity-"));
  const results: Result[] = [];
  try {
    await withScratchDatabase("conveyor_bench_capacity", async ({ url, name: dbName }) => {
      // Tenants, a member each, a token each (before the product starts: it seeds no demo data then).
      const tenants: { id: string; slug: string; token: string }[] = [];
      for (let t = 0; t < TENANTS; t++) {
        const slug = `capacity-${t + 1}`;
        const [row] = await q<{ id: string }>(
          `INSERT INTO tenants (id, slug, name) VALUES (gen_random_uuid(), $1, $2) RETURNING id`,
          [slug, `Capacity ${t + 1}`],
        );
        const email = `member${t + 1}@capacity.test`;
        await q(
          `WITH u AS (INSERT INTO users (id, email, name, password_hash) VALUES (gen_random_uuid(), $1, $2, 'unusable') RETURNING id)
           INSERT INTO memberships (user_id, tenant_id, role) SELECT id, $3, 'member' FROM u`,
          [email, `Member ${t + 1}`, row!.id],
        );
        tenants.push({ id: row!.id, slug, token: await createApiTokenForEmail(email, "bench:capacity", slug) });
      }
      const { base, child } = await startProduct(url, { CONVEYOR_DATA_DIR: dataDir, ...extraEnv });
      const root = child.pid!;
      try {
        const api = async (tenant: number, method: string, p: string, body?: unknown) =>
          fetch(`${base}/api/v1/webhooks/endpoints${p}`, {
            method,
            headers: { Authorization: `Bearer ${tenants[tenant]!.token}`, "content-type": "application/json" },
            body: body === undefined ? undefined : JSON.stringify(body),
          });

        const phase = async (part: string, path: Path, rate: number, delayMs: number): Promise<Result> => {
          console.log(`\n— ${part}: ${path}, ${rate}/s, runtime ${delayMs} ms (load average ${load()})`);
          await receiver.take();
          receiver.setDelay(delayMs);
          // Webhooks: fresh endpoints (fresh in-flight limits), spread over the tenants.
          const endpoints: { id: string; tenant: number }[] = [];
          if (path === "webhooks") {
            for (let i = 0; i < ENDPOINTS; i++) {
              const tenant = i % TENANTS;
              const res = await api(tenant, "POST", "", {
                url: `${receiver.url}/${tenants[tenant]!.slug}/e${i}`,
                events: ["job.succeeded"],
                rateLimitPerSecond: Number(values["endpoint-rate"]),
              });
              if (res.status !== 201) throw new Error(`creating an endpoint: ${res.status} ${await res.text()}`);
              endpoints.push({ id: ((await res.json()) as { endpoint: { id: string } }).endpoint.id, tenant });
            }
          }
          const endpointIds = endpoints.map((x) => x.id);
          const running = async () =>
            (
              await q<{ n: number }>(`SELECT count(*)::int AS n FROM jobs WHERE type = 'probe' AND status = 'running'`)
            )[0]!.n;
          const samples = sampler(dbName, path === "bare" ? null : root, path === "probe" ? running : undefined);
          // An idle backend reports its counters up to 10 s late (Postgres 15): the last phase's (and its
          // cleanup's) are in before this one's are read; and the first sample names the backends.
          await sleep(path === "bare" ? 1_100 : 11_000);
          const counters = await pgCounters(dbName);
          const cpuBefore = cpuSnapshot(receiver.child, path === "bare" ? null : root, samples.pgPids);
          const offered: Offered[] = [];
          const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
          const t0 = Date.now();
          const send = async (i: number) => {
            const o: Offered = { sentAt: Date.now(), acceptedAt: null, id: null, error: null };
            offered[i] = o;
            try {
              if (path === "bare") {
                o.id = `bare-${t0}-${i}`;
                await new Promise<void>((resolve, reject) => {
                  const req = http.request(
                    `${receiver.url}/bare`,
                    { method: "POST", agent, headers: { "webhook-id": o.id!, "content-type": "application/json" } },
                    (res) => {
                      res.resume();
                      res.on("end", () => resolve());
                    },
                  );
                  req.on("error", reject);
                  req.end("{}");
                });
                o.acceptedAt = o.sentAt;
              } else if (path === "webhooks") {
                const ep = endpoints[i % endpoints.length]!;
                const res = await api(ep.tenant, "POST", `/${ep.id}/test`);
                if (res.status !== 202) throw new Error(`${res.status} ${await res.text()}`);
                o.id = ((await res.json()) as { messageId: string }).messageId;
                o.acceptedAt = Date.now();
              } else {
                const { job } = await enqueueJob({
                  tenantId: tenants[i % TENANTS]!.id,
                  type: "probe",
                  input: { sleepMs: delayMs },
                });
                o.id = job.id;
                o.acceptedAt = Date.now();
              }
            } catch (err) {
              o.error = String((err as Error).message ?? err).slice(0, 200);
            }
          };
          const run = await offer(rate, SECONDS, send);
          const cpuAfter = cpuSnapshot(receiver.child, path === "bare" ? null : root, samples.pgPids);
          // Drain: every accepted message delivered (or run), or the deadline.
          const deadline = Date.now() + delayMs + DRAIN_S * 1000;
          const acceptedIds = () => offered.filter((o) => o?.id && !o.error).map((o) => o.id!);
          if (path === "bare") {
            await Promise.race([run.done, sleep(Math.max(0, deadline - Date.now()))]);
          } else {
            await run.done;
            const ids = acceptedIds();
            for (;;) {
              const [d] =
                path === "webhooks"
                  ? await q<{ n: number }>(
                      `SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = ANY($1::uuid[]) AND delivered_at IS NOT NULL`,
                      [endpointIds],
                    )
                  : await q<{ n: number }>(
                      `SELECT count(*)::int AS n FROM jobs WHERE id = ANY($1::uuid[]) AND status = 'succeeded'`,
                      [ids],
                    );
              if (d!.n >= ids.length || Date.now() > deadline) break;
              await sleep(1_000);
            }
          }
          const { pgPeak, rssPeak, extras } = await samples.stop();
          const taken = await receiver.take();
          const ids = acceptedIds();
          const errors = offered.filter((o) => o?.error);
          if (errors.length) console.log(`  ${errors.length} sends failed, the first: ${errors[0]!.error}`);
          const pg = path === "bare" ? { tx: null, rows: "—" } : await pgPerMessage(dbName, counters, ids.length);

          // Lag, deliveries, duplicates.
          let lags: number[] = [];
          let delivered = 0;
          let duplicates = 0;
          let strangers = 0;
          let requests = 0;
          let runsPerMessage: number | null = null;
          let inflightSamples: { at: number; n: number }[];
          const firstStarts: number[] = [];
          if (path === "probe") {
            const rows = await q<{
              created: number;
              started: number | null;
              status: string;
              executions: number | null;
              runs: number;
            }>(
              `SELECT (extract(epoch FROM j.created_at) * 1000)::float8 AS created,
                      (SELECT (extract(epoch FROM min(a.started_at)) * 1000)::float8 FROM job_attempts a WHERE a.job_id = j.id) AS started,
                      (SELECT count(*)::int FROM job_attempts a WHERE a.job_id = j.id) AS runs,
                      j.status, e.executions
                 FROM jobs j LEFT JOIN probe_effects e ON e.job_id = j.id WHERE j.id = ANY($1::uuid[])`,
              [ids],
            );
            for (const r of rows) {
              if (r.started !== null) {
                lags.push(r.started - r.created);
                firstStarts.push(r.started);
              }
              if (r.status === "succeeded") delivered++;
              duplicates += Math.max(0, (r.executions ?? 0) - 1);
              requests += r.executions ?? 0;
            }
            const done = rows.filter((r) => r.status === "succeeded");
            runsPerMessage = done.length ? done.reduce((s, r) => s + r.runs, 0) / done.length : null;
            inflightSamples = extras;
            lags = lags.concat(Array<number>(ids.length - lags.length).fill(Infinity));
          } else {
            const sent = new Set(ids);
            const first = new Map<string, number>();
            for (const h of taken.hits) {
              if (path === "bare" ? h.path !== "/bare" : h.path === "/bare") continue;
              if (!sent.has(h.id)) {
                strangers++;
                continue;
              }
              requests++;
              if (first.has(h.id)) duplicates++;
              else first.set(h.id, h.at);
            }
            delivered = first.size;
            firstStarts.push(...first.values());
            const acceptedAt = new Map<string, number>();
            if (path === "webhooks") {
              for (const m of await q<{ id: string; at: number }>(
                `SELECT id, (extract(epoch FROM created_at) * 1000)::float8 AS at FROM webhook_messages WHERE id = ANY($1::text[])`,
                [ids],
              )) {
                acceptedAt.set(m.id, Number(m.at));
              }
              // Job runs (deferrals included) of the deliveries that were delivered.
              const [r] = await q<{ runs: number; n: number }>(
                `SELECT count(a.*)::int AS runs, count(DISTINCT d.id)::int AS n
                   FROM webhook_deliveries d LEFT JOIN job_attempts a ON a.job_id = d.job_id
                  WHERE d.endpoint_id = ANY($1::uuid[]) AND d.delivered_at IS NOT NULL`,
                [endpointIds],
              );
              runsPerMessage = r!.n ? r!.runs / r!.n : null;
            } else {
              for (const o of offered) if (o?.id) acceptedAt.set(o.id, o.sentAt);
            }
            lags = ids.map((id) => (first.has(id) ? first.get(id)! - acceptedAt.get(id)! : Infinity));
            inflightSamples = taken.samples.map((s) => ({ at: s.at, n: s.open }));
          }
          const finite = lags.filter((l) => Number.isFinite(l));
          const lag = lagStats(finite, lags.length - finite.length);
          const lagDelivered = lagStats(finite, 0);
          const fl = inflight(inflightSamples, t0, delayMs, SECONDS);
          const startedInWindow = firstStarts.filter((at) => at >= t0 && at <= t0 + SECONDS * 1000).length;
          const result: Result = {
            part,
            path,
            rate,
            delayMs,
            offered: run.n,
            accepted: ids.length,
            acceptRate: ids.length / run.offeredFor,
            startedPerSecond: startedInWindow / SECONDS,
            inflightPeak: fl.peak,
            inflightSteady: fl.steady,
            lag,
            lagDelivered,
            delivered,
            duplicates,
            strangers,
            retryFactor: delivered ? requests / delivered : NaN,
            runsPerMessage,
            pgPeak,
            rssPeak,
            cores: coresBetween(cpuBefore, cpuAfter),
            txPerMessage: pg.tx,
            rowsPerMessage: pg.rows,
            load: load(),
          };
          printPhase(result, run.held);

          // What is left ends, so the next phase starts clean.
          if (path === "webhooks") {
            for (const ep of endpoints) {
              const res = await api(ep.tenant, "DELETE", `/${ep.id}`);
              if (res.status !== 204) throw new Error(`deleting an endpoint: ${res.status} ${await res.text()}`);
            }
          } else if (path === "probe") {
            const left = await q<{ id: string }>(
              `SELECT id FROM jobs WHERE id = ANY($1::uuid[]) AND status NOT IN ('succeeded', 'failed', 'cancelled')`,
              [ids],
            );
            await requestCancel(
              pool(),
              left.map((r) => r.id),
              "bench:capacity: the phase is over",
            );
            const until = Date.now() + 30_000;
            while ((await running()) > 0 && Date.now() < until) await sleep(500);
          }
          const until = Date.now() + delayMs + 5_000;
          while ((await receiver.take()).open > 0 && Date.now() < until) await sleep(500);
          agent.destroy();
          return result;
        };

        const wanted = (p: Path) => PATHS.includes(p);
        if (values.only === "all" || values.only === "concurrency") {
          for (const p of ["bare", "webhooks", "probe"] as const) {
            if (wanted(p)) results.push(await phase("concurrency", p, Number(values.rate), Number(values["delay-ms"])));
          }
        }
        if (values.only === "all" || values.only === "throughput") {
          for (const rate of values.rates!.split(",").map(Number)) {
            for (const p of ["bare", "webhooks", "probe"] as const) {
              if (wanted(p)) {
                results.push(await phase("throughput", p, rate, Number(values["throughput-delay-ms"])));
              }
            }
          }
        }
        summary(results);
      } finally {
        await stopProduct(child);
      }
    });
  } finally {
    await stopProcess(receiver.child);
  }
}

function printPhase(r: Result, held: number): void {
  const little = r.rate * (r.delayMs / 1000);
  console.log(
    `  prediction: ${r.rate}/s × ${r.delayMs / 1000} s × ${RETRY_FACTOR} = ${int(little * RETRY_FACTOR)} ` +
      `(rate × runtime alone: ${int(little)})`,
  );
  console.log(
    `  offered ${int(r.offered)}, accepted ${int(r.accepted)} at ${r.acceptRate.toFixed(1)}/s` +
      (held ? ` (the generator held back ${held} times at ${MAX_OUTSTANDING} outstanding)` : "") +
      `; started while offered: ${r.startedPerSecond.toFixed(1)}/s`,
  );
  console.log(
    `  in flight: peak ${int(r.inflightPeak)}, steady median ${Number.isNaN(r.inflightSteady) ? "—" : int(r.inflightSteady)}`,
  );
  console.log(
    `  start lag p50 ${fmtMs(r.lag.p50)}, p95 ${fmtMs(r.lag.p95)}, p99 ${fmtMs(r.lag.p99)}` +
      (r.delivered < r.accepted
        ? ` (of those delivered: ${fmtMs(r.lagDelivered.p50)}, ${fmtMs(r.lagDelivered.p95)}, ${fmtMs(r.lagDelivered.p99)})`
        : ""),
  );
  console.log(
    `  delivered ${int(r.delivered)} / ${int(r.accepted)}; duplicates (same webhook-id) ${r.duplicates}; ` +
      `strangers (an id never sent) ${r.strangers}; requests per message ${r.retryFactor.toFixed(3)}` +
      (r.runsPerMessage !== null ? `; job runs per message delivered ${r.runsPerMessage.toFixed(2)}` : ""),
  );
  if (r.path !== "bare") {
    console.log(
      `  Postgres connections peak ${r.pgPeak} (this script's pool included); worker RSS peak: ` +
        [...r.rssPeak]
          .filter(([role]) => role.startsWith("worker"))
          .map(([role, mb]) => `${role.slice(7)} ${mb.toFixed(0)} MB`)
          .join(", ") +
        `; web ${(r.rssPeak.get("web") ?? 0).toFixed(0)} MB`,
    );
    console.log(
      `  per message accepted (everything on the database during the phase, background polls included): ` +
        `${r.txPerMessage?.toFixed(1) ?? "—"} transactions; rows written ${r.rowsPerMessage}`,
    );
  }
  const machine = [...r.cores].find(([role]) => role.startsWith("machine"))?.[1] ?? 0;
  const slots = poolSlots[r.path];
  const carried = r.startedPerSecond >= r.rate * 0.95;
  const bounds = [
    slots !== undefined && r.inflightPeak >= slots * 0.9 ? `in flight at the pool's ${slots} slots` : null,
    !carried && machine >= 1.8
      ? `the machine's CPU (${machine.toFixed(2)} of 2 cores busy, other work included)`
      : null,
    r.acceptRate < r.rate * 0.95 ? `acceptance (${r.acceptRate.toFixed(1)}/s of ${r.rate}/s offered)` : null,
  ].filter(Boolean);
  console.log(
    `  bound: ${bounds.length ? bounds.join("; ") : carried ? "none reached (the rate was carried)" : "none of the pool, the CPU or acceptance: see the limits above"}`,
  );
  console.log(
    `  CPU while offered (cores of 2): ` +
      [...r.cores]
        .filter(([, c]) => c >= 0.005)
        .map(([role, c]) => `${role} ${c.toFixed(2)}`)
        .join(", "),
  );
}

function summary(results: Result[]): void {
  const bare = (r: Result) => results.find((b) => b.path === "bare" && b.part === r.part && b.rate === r.rate);
  console.log(`\nSummary (load average at the end ${load()}; 2 cores shared by everything here, and other work)`);
  console.log(
    "| part | path | rate | runtime | prediction (×1.3) | in flight peak / steady | vs bare | lag p50 / p95 / p99 | started/s | delivered | dup / strangers | req per msg | PG conns peak | worker RSS peak |",
  );
  console.log("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
  for (const r of results) {
    const b = bare(r);
    const rss = [...r.rssPeak]
      .filter(([role]) => role === `worker ${r.path === "webhooks" ? "webhooks" : "bulk"}`)
      .map(([, mb]) => `${mb.toFixed(0)} MB`)
      .join("");
    console.log(
      `| ${r.part} | ${r.path} | ${r.rate}/s | ${r.delayMs / 1000} s | ${int(r.rate * (r.delayMs / 1000) * RETRY_FACTOR)} | ` +
        `${int(r.inflightPeak)} / ${Number.isNaN(r.inflightSteady) ? "—" : int(r.inflightSteady)} | ` +
        `${b && r !== b && b.inflightSteady ? `${(r.inflightSteady / b.inflightSteady).toFixed(3)}×` : "—"} | ` +
        `${fmtMs(r.lag.p50)} / ${fmtMs(r.lag.p95)} / ${fmtMs(r.lag.p99)} | ${r.startedPerSecond.toFixed(1)} | ` +
        `${int(r.delivered)} / ${int(r.accepted)} | ${r.duplicates} / ${r.strangers} | ${r.retryFactor.toFixed(2)} | ` +
        `${r.path === "bare" ? "—" : r.pgPeak} | ${r.path === "bare" ? "—" : rss || "—"} |`,
    );
  }
  const c = results.find((r) => r.part === "concurrency" && r.path === "webhooks");
  if (c) {
    console.log(
      `\nGoal (webhooks, ${c.rate}/s to a ${c.delayMs / 1000}-s receiver): ≥ 1,000 in flight — ${int(c.inflightSteady)} steady, ` +
        `${int(c.inflightPeak)} peak: ${c.inflightSteady >= 1000 ? "met" : "NOT met"}; start lag p95 ≤ 1 s, p99 ≤ 2 s — ` +
        `${fmtMs(c.lag.p95)}, ${fmtMs(c.lag.p99)}: ${c.lag.p95 <= 1000 && c.lag.p99 <= 2000 ? "met" : "NOT met"}; ` +
        `delivered ${int(c.delivered)} of ${int(c.accepted)} by the deadline (the rest cancelled at the phase's end), ` +
        `duplicates ${c.duplicates}, strangers ${c.strangers}; ` +
        `Postgres connections ≤ 100: ${c.pgPeak <= 100 ? "yes" : "NO"} (${c.pgPeak})`,
    );
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
