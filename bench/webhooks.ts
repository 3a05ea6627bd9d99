/**
 * npm run bench:webhooks [-- --events 1000 --rate 50]
 * Isolation between webhook endpoints, through the path users take: the server
 * `npm start` runs (scripts/supervisor.ts: web server and its worker pools,
 * default settings but WEBHOOK_ALLOW_PRIVATE=1 for receivers on the loopback),
 * over a scratch database with the demo tenants. Events are real: `--events`
 * probe jobs of tenant acme enqueued at `--rate` per second; each one that
 * succeeds is a `job.succeeded` event for every endpoint of acme that wants it.
 *
 * Three receivers on the loopback: healthy (answers 200 at once), slow
 * (answers after 5 s), failing (503 with Retry-After: 2 for 40 s, then 410).
 * All three endpoints belong to the same tenant, with a rate limit of 100/s.
 *
 * Baseline, same server, same script: the healthy endpoint alone. Then the
 * same events with the slow and failing endpoints present. Reported: the
 * healthy endpoint's delivery latency (receipt − the job's finish) p50/p99
 * both ways and their ratio (goal ≤ 1.2×); and, from the record: no request
 * to the failing endpoint before a Retry-After it was given for that message,
 * none while its circuit was open (sampled state), and that 410 disabled it.
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
      const hit: Hit = { at, id: String(req.headers["webhook-id"]), jobId, finishedAt, answeredAt: 0, status: 0 };
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

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      events: { type: "string", default: "1000" },
      rate: { type: "string", default: "50" },
      // Which bad endpoints join the second run (a diagnosis aid): both, slow or failing.
      bad: { type: "string", default: "both" },
    },
  });
  const events = Number(values.events);
  const rate = Number(values.rate);
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
  const urls = { healthy: await healthy.start(), slow: await slow.start(), failing: await failing.start() };

  await withScratchDatabase("conveyor_bench_webhooks", async ({ url }) => {
    await seed(0.001);
    const token = await createApiTokenForEmail("ada@acme.test", "bench:webhooks");
    const tenantId = (await q<{ id: string }>(`SELECT id FROM tenants WHERE slug = 'acme'`))[0]!.id;
    const { base, child } = await startProduct(url, { CONVEYOR_DATA_DIR: dataDir, WEBHOOK_ALLOW_PRIVATE: "1" });
    const createEndpoint = async (u: string) => {
      const res = await fetch(`${base}/api/v1/webhooks/endpoints`, {
        method: "POST",
        headers: { Authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ url: u, events: ["job.succeeded"], rateLimitPerSecond: 100 }),
      });
      if (res.status !== 201) throw new Error(`creating an endpoint: ${res.status} ${await res.text()}`);
      return ((await res.json()) as { endpoint: { id: string } }).endpoint.id;
    };
    /** `n` probe jobs at `rate`/s; resolves with their ids once all are enqueued. */
    const fire = async (n: number): Promise<Set<string>> => {
      const ids = new Set<string>();
      const t0 = performance.now();
      for (let i = 0; i < n; i++) {
        const wait = t0 + (i * 1000) / rate - performance.now();
        if (wait > 0) await sleep(wait);
        const { job } = await enqueueJob({ tenantId, type: "probe", input: { sleepMs: 0 } });
        ids.add(job.id);
      }
      return ids;
    };
    /** Where one run's healthy deliveries spent their time: waiting to be admitted, to start, running. */
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
          console.log(
            `${label}: ${new Set(got.map((h) => h.jobId)).size}/${ids.size} delivered to healthy; ` +
              `latency p50 ${fmt(percentile(lat, 50))}, p99 ${fmt(percentile(lat, 99))}`,
          );
          return lat;
        }
        await sleep(200);
      }
    };
    try {
      const healthyId = await createEndpoint(urls.healthy);
      await healthyLatencies(await fire(200), "warm-up");
      const aloneIds = await fire(events);
      const alone = await healthyLatencies(aloneIds, "healthy endpoint alone");
      await breakdown(aloneIds, healthyId);

      const slowId =
        values.bad === "failing" ? "00000000-0000-0000-0000-000000000000" : await createEndpoint(urls.slow);
      const failingId =
        values.bad === "slow" ? "00000000-0000-0000-0000-000000000000" : await createEndpoint(urls.failing);
      failingUntil = Date.now() + 40_000;
      // Sample the failing endpoint's circuit while the run goes on.
      const openings = new Map<string, { from: Date; until: Date }>();
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          const [s] = await q<{ circuit: string; opened_at: Date | null; retry_at: Date | null }>(
            `SELECT circuit, opened_at, retry_at FROM downstreams WHERE key = $1`,
            [`webhook:${failingId}`],
          );
          if (s?.circuit === "open" && s.retry_at) {
            const k = s.retry_at.toISOString();
            const cur = openings.get(k);
            // The circuit was open from when it (re)opened: the later of opened_at and the previous retry_at.
            if (!cur) openings.set(k, { from: new Date(s.retry_at.getTime() - 30_000), until: s.retry_at });
          }
          await sleep(50);
        }
      })();
      const badIds = await fire(events);
      const withBad = await healthyLatencies(badIds, "with slow and failing endpoints");
      await breakdown(badIds, healthyId);
      // Let the failing endpoint reach its 410.
      const deadline = Date.now() + (values.bad === "slow" ? 0 : 120_000);
      while (Date.now() < deadline) {
        const [e] = await q<{ d: boolean }>(
          `SELECT disabled_at IS NOT NULL AS d FROM webhook_endpoints WHERE id = $1`,
          [failingId],
        );
        if (e?.d) break;
        await sleep(500);
      }
      sampling = false;
      await sampler;

      const p50 = percentile(withBad, 50) / percentile(alone, 50);
      const p99 = percentile(withBad, 99) / percentile(alone, 99);
      console.log(
        `\nhealthy latency with bad endpoints / alone: p50 ${p50.toFixed(2)}×, p99 ${p99.toFixed(2)}× (goal ≤ 1.2×)`,
      );

      // Retry-After: per message, no request to the failing endpoint within 2 s of a 503 it got.
      const byId = new Map<string, Hit[]>();
      for (const h of failing.hits) byId.set(h.id, [...(byId.get(h.id) ?? []), h]);
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
        `failing endpoint: ${failing.hits.length} requests (${byId.size} messages, ${retried} retries); ` +
          `retries before their Retry-After: ${early}`,
      );
      // Circuit: no request started while it was open (from the record of attempts).
      const attempts = await q<{ started_at: Date }>(
        `SELECT a.started_at FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
          WHERE d.endpoint_id = $1 ORDER BY a.started_at`,
        [failingId],
      );
      let whileOpen = 0;
      for (const o of openings.values()) {
        whileOpen += attempts.filter((a) => a.started_at > o.from && a.started_at < o.until).length;
      }
      console.log(`circuit opened ${openings.size} times; requests sent while it was open: ${whileOpen}`);
      const [f] = await q<{ reason: string | null }>(
        `SELECT disabled_reason AS reason FROM webhook_endpoints WHERE id = $1`,
        [failingId],
      );
      console.log(`failing endpoint disabled: ${f?.reason ?? "NO"}`);
      const [s] = await q<{ n: number; sent: number }>(
        `SELECT count(*)::int AS n, coalesce(sum(attempts), 0)::int AS sent FROM webhook_deliveries WHERE endpoint_id = $1`,
        [slowId],
      );
      console.log(
        `slow endpoint: ${slow.hits.length} requests answered so far for ${s!.n} deliveries (at most WEBHOOK_ENDPOINT_CONCURRENCY at once)`,
      );
      // Where the healthy endpoint's deliveries spent their time, and how many runs each endpoint cost.
      const [w] = await q<{ wait: number; run: number }>(
        `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM j.started_at - j.created_at) * 1000) AS wait,
                percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM j.finished_at - j.started_at) * 1000) AS run
           FROM webhook_deliveries d JOIN jobs j ON j.id = d.job_id WHERE d.endpoint_id = $1`,
        [healthyId],
      );
      console.log(`healthy deliveries (both runs): p50 wait to start ${fmt(w!.wait)}, p50 run ${fmt(w!.run)}`);
      const runs = await q<{ endpoint: string; class: string; n: number }>(
        `SELECT CASE d.endpoint_id WHEN $1 THEN 'healthy' WHEN $2 THEN 'slow' ELSE 'failing' END AS endpoint,
                coalesce(a.error_class, a.outcome) AS class, count(*)::int AS n
           FROM webhook_deliveries d JOIN job_attempts a ON a.job_id = d.job_id
          GROUP BY 1, 2 ORDER BY 1, 3 DESC`,
        [healthyId, slowId],
      );
      console.log(`job runs by endpoint: ${runs.map((r) => `${r.endpoint} ${r.class} ${r.n}`).join(", ")}`);
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
