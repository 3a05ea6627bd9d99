/**
 * npm run bench:webhooks [-- --events 1000 --rate 50 --runs 3 --bad both|slow|failing --tenants both|acme|globex]
 * Isolation between webhook endpoints, through the path users take: the server
 * `npm start` runs (scripts/supervisor.ts: web server and its worker pools,
 * default settings but WEBHOOK_ALLOW_PRIVATE=1 for receivers on the loopback),
 * over a scratch database with the demo tenants. Events are real: `--events`
 * probe jobs in each of acme and globex, enqueued at `--rate` per second per
 * tenant; each one that succeeds is a `job.succeeded` event for every endpoint
 * of its tenant that wants it.
 *
 * Three receivers on the loopback: healthy (answers 200 at once), slow
 * (answers after 5 s), failing (503 with Retry-After: 2 for 40 s, then 410).
 * acme has the healthy endpoint; each run then adds a slow and a failing
 * endpoint to acme (the same tenant) and to globex (another), all with a rate
 * limit of 100/s, and deletes them at its end.
 *
 * Each run: the healthy endpoint alone (baseline, same server, same events),
 * then beside the bad ones. Reported per run and as medians over the runs: the
 * healthy endpoint's delivery latency (receipt − the job's finish) p50/p95/p99
 * both ways and their ratio (goals: p50 ≤ 1.2×, p95 ≤ 1.5×); and, from the
 * record: no request to a failing endpoint before a Retry-After it was given
 * for that message, none while its circuit was open (sampled state), that 410
 * disabled it, and how many job runs each endpoint's deliveries cost.
 */
import http from "node:http";
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { createApiTokenForEmail } from "@/lib/auth/tokens";
import { enqueueJob } from "@/lib/jobs/enqueue";
import "@/lib/workloads";
import { seed } from "../prisma/seed";
import { withScratchDatabase } from "../scripts/database";
import { percentile, q, startProduct, stopProduct } from "./harness";

type Hit = {
  at: number;
  id: string;
  /** The webhook-id and the path it came to: one delivery. */
  key: string;
  jobId: string | null;
  finishedAt: number | null;
  answeredAt: number;
  status: number;
};

function receiver(name: string, answer: (hit: Hit) => Promise<{ status: number; headers?: Record<string, string> }>) {
  const hits: Hit[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const at = Date.now();
      let jobId: string | null = null;
      let finishedAt: number | null = null;
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString()) as { data?: { jobId?: string; finishedAt?: string } };
        jobId = body.data?.jobId ?? null;
        finishedAt = body.data?.finishedAt ? Date.parse(body.data.finishedAt) : null;
      } catch {
        /* not ours */
      }
      const id = String(req.headers["webhook-id"]);
      const hit: Hit = { at, id, key: `${req.url} ${id}`, jobId, finishedAt, answeredAt: 0, status: 0 };
      const a = await answer(hit);
      hit.answeredAt = Date.now();
      hit.status = a.status;
      hits.push(hit);
      res.writeHead(a.status, a.headers);
      res.end(name);
    });
  });
  return {
    hits,
    async start() {
      server.listen(0, "127.0.0.1");
      await once(server, "listening");
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}/${name}`;
    },
    close: () => server.close(),
  };
}

const fmt = (n: number) => `${n.toFixed(0)} ms`;
const median = (xs: number[]) => percentile(xs, 50);
type Stats = { p50: number; p95: number; p99: number };
const stats = (lat: number[]): Stats => ({
  p50: percentile(lat, 50),
  p95: percentile(lat, 95),
  p99: percentile(lat, 99),
});

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      events: { type: "string", default: "1000" },
      rate: { type: "string", default: "50" },
      runs: { type: "string", default: "3" },
      // Which bad endpoints join the second phase (a diagnosis aid): both, slow or failing.
      bad: { type: "string", default: "both" },
      // Where the bad endpoints are: both tenants, the healthy endpoint's own (acme) or the other (globex).
      tenants: { type: "string", default: "both" },
    },
  });
  const events = Number(values.events);
  const rate = Number(values.rate);
  const runs = Number(values.runs);
  const badKinds = values.bad === "both" ? ["slow", "failing"] : [values.bad!];
  const badTenants = values.tenants === "both" ? ["acme", "globex"] : [values.tenants!];
  const dataDir = await mkdtemp(path.join(tmpdir(), "conveyor-bench-webhooks-"));
  let failingUntil = Infinity;
  const healthy = receiver("healthy", async () => ({ status: 200 }));
  const slow = receiver("slow", async () => {
    await sleep(5_000);
    return { status: 200 };
  });
  const failing = receiver("failing", async () =>
    Date.now() < failingUntil ? { status: 503, headers: { "Retry-After": "2" } } : { status: 410 },
  );
  const urls: Record<string, string> = {
    healthy: await healthy.start(),
    slow: await slow.start(),
    failing: await failing.start(),
  };

  await withScratchDatabase("conveyor_bench_webhooks", async ({ url }) => {
    await seed(0.001);
    const tokens: Record<string, string> = {
      acme: await createApiTokenForEmail("ada@acme.test", "bench:webhooks"),
      globex: await createApiTokenForEmail("gus@globex.test", "bench:webhooks"),
    };
    const tenantIds: Record<string, string> = {};
    for (const t of await q<{ id: string; slug: string }>(`SELECT id, slug FROM tenants`)) tenantIds[t.slug] = t.id;
    const { base, child } = await startProduct(url, { CONVEYOR_DATA_DIR: dataDir, WEBHOOK_ALLOW_PRIVATE: "1" });
    const api = async (tenant: string, method: string, p: string, body?: unknown) =>
      fetch(`${base}/api/v1/webhooks/endpoints${p}`, {
        method,
        headers: { Authorization: `Bearer ${tokens[tenant]}`, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    const createEndpoint = async (tenant: string, kind: string) => {
      // Each endpoint's own path: the receivers tell them apart by their tenant in the URL.
      const res = await api(tenant, "POST", "", {
        url: `${urls[kind]}/${tenant}`,
        events: ["job.succeeded"],
        rateLimitPerSecond: 100,
      });
      if (res.status !== 201) throw new Error(`creating an endpoint: ${res.status} ${await res.text()}`);
      return ((await res.json()) as { endpoint: { id: string } }).endpoint.id;
    };
    /**
     * `n` probe jobs at `rate`/s in each tenant (acme, whose healthy endpoint is measured, and globex);
     * resolves with acme's job ids once all are enqueued.
     */
    const fire = async (n: number): Promise<Set<string>> => {
      const ids = new Set<string>();
      const t0 = performance.now();
      for (let i = 0; i < n; i++) {
        const wait = t0 + (i * 1000) / rate - performance.now();
        if (wait > 0) await sleep(wait);
        const [{ job }] = await Promise.all([
          enqueueJob({ tenantId: tenantIds.acme!, type: "probe", input: { sleepMs: 0 } }),
          enqueueJob({ tenantId: tenantIds.globex!, type: "probe", input: { sleepMs: 0 } }),
        ]);
        ids.add(job.id);
      }
      return ids;
    };
    /** Where one phase's healthy deliveries spent their time: waiting to be admitted, to start, running. */
    const breakdown = async (ids: Set<string>, endpointId: string) => {
      const [b] = await q<{ admit: number; start: number; run: number; runs: number }>(
        `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM j.admitted_at - j.created_at) * 1000) AS admit,
                percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM j.started_at - j.admitted_at) * 1000) AS start,
                percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM j.finished_at - j.started_at) * 1000) AS run,
                avg((SELECT count(*) FROM job_attempts a WHERE a.job_id = j.id))::float8 AS runs
           FROM webhook_messages m JOIN webhook_deliveries d ON d.message_id = m.id JOIN jobs j ON j.id = d.job_id
          WHERE m.job_id = ANY($1::uuid[]) AND d.endpoint_id = $2`,
        [[...ids], endpointId],
      );
      console.log(
        `  healthy deliveries p50: created → admitted ${fmt(b!.admit)}, admitted → started ${fmt(b!.start)}, ` +
          `running ${fmt(b!.run)}; ${b!.runs.toFixed(2)} runs each`,
      );
    };
    const healthyLatencies = async (ids: Set<string>, label: string) => {
      const deadline = Date.now() + 10 * 60_000;
      for (;;) {
        const got = healthy.hits.filter((h) => h.jobId && ids.has(h.jobId));
        if (new Set(got.map((h) => h.jobId)).size >= ids.size || Date.now() > deadline) {
          const lat = got.map((h) => h.at - h.finishedAt!);
          const s = stats(lat);
          console.log(
            `${label}: ${new Set(got.map((h) => h.jobId)).size}/${ids.size} delivered to healthy; ` +
              `latency p50 ${fmt(s.p50)}, p95 ${fmt(s.p95)}, p99 ${fmt(s.p99)}`,
          );
          return s;
        }
        await sleep(200);
      }
    };

    const results: { alone: Stats; beside: Stats }[] = [];
    try {
      const healthyId = await createEndpoint("acme", "healthy");
      await healthyLatencies(await fire(200), "warm-up");
      for (let run = 1; run <= runs; run++) {
        console.log(`\n— run ${run} of ${runs}`);
        const aloneIds = await fire(events);
        const alone = await healthyLatencies(aloneIds, "healthy endpoint alone");
        await breakdown(aloneIds, healthyId);

        const bad: { tenant: string; kind: string; id: string }[] = [];
        for (const tenant of badTenants) {
          for (const kind of badKinds) bad.push({ tenant, kind, id: await createEndpoint(tenant, kind) });
        }
        const failingIds = bad.filter((b) => b.kind === "failing").map((b) => b.id);
        const slowIds = bad.filter((b) => b.kind === "slow").map((b) => b.id);
        const failingFrom = failing.hits.length;
        const slowFrom = slow.hits.length;
        failingUntil = Date.now() + 40_000;
        // Sample the failing endpoints' circuits while the phase goes on.
        const openings = new Map<string, { key: string; from: Date; until: Date }>();
        let sampling = true;
        const sampler = (async () => {
          while (sampling) {
            const states = await q<{ key: string; circuit: string; retry_at: Date | null }>(
              `SELECT key, circuit, retry_at FROM downstreams WHERE key = ANY($1::text[])`,
              [failingIds.map((id) => `webhook:${id}`)],
            );
            for (const s of states) {
              if (s.circuit !== "open" || !s.retry_at) continue;
              const k = `${s.key} ${s.retry_at.toISOString()}`;
              // Open from when it (re)opened: retry_at − the open period.
              if (!openings.has(k)) {
                openings.set(k, { key: s.key, from: new Date(s.retry_at.getTime() - 30_000), until: s.retry_at });
              }
            }
            await sleep(50);
          }
        })();
        const badIds = await fire(events);
        const beside = await healthyLatencies(
          badIds,
          `beside ${badKinds.join(" and ")} endpoints in ${badTenants.join(" and ")}`,
        );
        await breakdown(badIds, healthyId);
        results.push({ alone, beside });
        console.log(
          `  ratio beside / alone: p50 ${(beside.p50 / alone.p50).toFixed(2)}×, p95 ${(beside.p95 / alone.p95).toFixed(2)}×, ` +
            `p99 ${(beside.p99 / alone.p99).toFixed(2)}×`,
        );
        // Let the failing endpoints reach their 410.
        const deadline = Date.now() + (failingIds.length ? 120_000 : 0);
        while (Date.now() < deadline) {
          const [e] = await q<{ n: number }>(
            `SELECT count(*)::int AS n FROM webhook_endpoints WHERE id = ANY($1::uuid[]) AND disabled_at IS NULL`,
            [failingIds],
          );
          if (e!.n === 0) break;
          await sleep(500);
        }
        sampling = false;
        await sampler;

        // Retry-After: per message and endpoint, no request to a failing endpoint within 2 s of a 503 it got.
        const byId = new Map<string, Hit[]>();
        for (const h of failing.hits.slice(failingFrom)) byId.set(h.key, [...(byId.get(h.key) ?? []), h]);
        let early = 0;
        let retried = 0;
        for (const hs of byId.values()) {
          hs.sort((a, b) => a.at - b.at);
          for (let i = 1; i < hs.length; i++) {
            retried++;
            if (hs[i - 1]!.status === 503 && hs[i]!.at < hs[i - 1]!.answeredAt + 2_000) early++;
          }
        }
        console.log(
          `  failing endpoints: ${failing.hits.length - failingFrom} requests (${byId.size} deliveries, ${retried} retries); ` +
            `retries before their Retry-After: ${early}`,
        );
        // Circuit: no request started while it was open (from the record of attempts).
        const attempts = await q<{ key: string; started_at: Date }>(
          `SELECT 'webhook:' || d.endpoint_id::text AS key, a.started_at
             FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
            WHERE d.endpoint_id = ANY($1::uuid[])`,
          [failingIds],
        );
        let whileOpen = 0;
        for (const o of openings.values()) {
          whileOpen += attempts.filter(
            (a) => a.key === o.key && a.started_at > o.from && a.started_at < o.until,
          ).length;
        }
        console.log(`  circuits opened ${openings.size} times; requests sent while open: ${whileOpen}`);
        const disabled = await q<{ reason: string | null }>(
          `SELECT disabled_reason AS reason FROM webhook_endpoints WHERE id = ANY($1::uuid[])`,
          [failingIds],
        );
        console.log(`  failing endpoints disabled: ${disabled.map((d) => d.reason ?? "NO").join("; ") || "—"}`);
        const [most] = await q<{ n: number }>(
          `SELECT coalesce(max(n), 0)::int AS n FROM (
             SELECT count(*) AS n FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
              WHERE d.endpoint_id = ANY($1::uuid[]) GROUP BY d.endpoint_id, date_trunc('second', a.started_at)) s`,
          [slowIds],
        );
        console.log(
          `  slow endpoints: ${slow.hits.length - slowFrom} requests answered; most started in one second at one: ${most!.n}`,
        );
        const runsBy = await q<{ endpoint: string; class: string; n: number }>(
          `SELECT CASE WHEN d.endpoint_id = $1 THEN 'healthy' WHEN d.endpoint_id = ANY($2::uuid[]) THEN 'slow'
                       ELSE 'failing' END AS endpoint,
                  coalesce(a.error_class, a.outcome) AS class, count(*)::int AS n
             FROM webhook_deliveries d JOIN job_attempts a ON a.job_id = d.job_id
            WHERE d.endpoint_id = $1 OR d.endpoint_id = ANY($3::uuid[])
            GROUP BY 1, 2 ORDER BY 1, 3 DESC`,
          [healthyId, slowIds, bad.map((b) => b.id)],
        );
        console.log(
          `  job runs by endpoint (so far): ${runsBy.map((r) => `${r.endpoint} ${r.class} ${r.n}`).join(", ")}`,
        );
        // The bad endpoints go (their waiting deliveries cancelled); the next run starts once their requests are answered.
        for (const b of bad) {
          const res = await api(b.tenant, "DELETE", `/${b.id}`);
          if (res.status !== 204) throw new Error(`deleting an endpoint: ${res.status} ${await res.text()}`);
        }
        await sleep(6_000);
      }

      const ratio = (k: keyof Stats) => median(results.map((r) => r.beside[k] / r.alone[k]));
      console.log(`\n${runs} runs, medians:`);
      for (const k of ["p50", "p95", "p99"] as const) {
        console.log(
          `  ${k}: alone ${fmt(median(results.map((r) => r.alone[k])))}, ` +
            `beside ${fmt(median(results.map((r) => r.beside[k])))}, ratio ${ratio(k).toFixed(2)}×`,
        );
      }
      console.log(`goal: p50 ≤ 1.2×, p95 ≤ 1.5×`);
    } finally {
      await stopProduct(child);
      healthy.close();
      slow.close();
      failing.close();
    }
  });
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
