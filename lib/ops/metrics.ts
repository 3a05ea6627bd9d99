/**
 * Prometheus metrics (`GET /api/metrics`, prom-client). Everything is read
 * from the database at scrape time, so any app process answers for the whole
 * fleet: queue depth, oldest waiting job, dead letters, live workers, attempts
 * and their durations. Counters and the histogram are totals over the attempt
 * history (they only grow while history is kept).
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { Counter, Gauge, Registry } from "prom-client";
import type { Principal } from "../auth/principal";
import { db } from "../db";
import { env } from "../env";
import { AppError } from "../errors";

/** Attempt duration buckets, in seconds. */
const BUCKETS = [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 1800] as const;

function build(): Registry {
  const registry = new Registry();

  new Gauge({
    name: "conveyor_jobs",
    help: "Jobs not finished, by queue, type and status",
    labelNames: ["queue", "type", "status"],
    registers: [registry],
    async collect() {
      this.reset();
      const rows = await db().$queryRaw<{ queue: string; type: string; status: string; n: bigint }[]>`
        SELECT queue, type, status::text, count(*) AS n FROM jobs
        WHERE status IN ('scheduled', 'queued', 'retrying', 'running') GROUP BY 1, 2, 3`;
      for (const r of rows) this.set({ queue: r.queue, type: r.type, status: r.status }, Number(r.n));
    },
  });

  new Gauge({
    name: "conveyor_oldest_waiting_seconds",
    help: "Age of the oldest due job that has not started, by queue and tenant",
    labelNames: ["queue", "tenant"],
    registers: [registry],
    async collect() {
      this.reset();
      const rows = await db().$queryRaw<{ queue: string; tenant: string; s: number }[]>`
        SELECT j.queue, t.slug AS tenant, extract(epoch FROM now() - min(j.run_at))::float8 AS s
        FROM jobs j JOIN tenants t ON t.id = j.tenant_id
        WHERE j.status IN ('queued', 'retrying') AND j.run_at <= now() GROUP BY 1, 2`;
      for (const r of rows) this.set({ queue: r.queue, tenant: r.tenant }, r.s);
    },
  });

  new Gauge({
    name: "conveyor_dead_letters",
    help: "Jobs in the dead-letter queue (failed, not replayed or discarded), by type",
    labelNames: ["type"],
    registers: [registry],
    async collect() {
      this.reset();
      const rows = await db().$queryRaw<{ type: string; n: bigint }[]>`
        SELECT type, count(*) AS n FROM jobs WHERE status = 'failed' AND discarded_at IS NULL GROUP BY 1`;
      for (const r of rows) this.set({ type: r.type }, Number(r.n));
    },
  });

  new Gauge({
    name: "conveyor_workers_live",
    help: "Worker processes heartbeating within WORKER_DEAD_AFTER_MS, by queues served",
    labelNames: ["queues"],
    registers: [registry],
    async collect() {
      this.reset();
      const rows = await db().$queryRaw<{ queues: string; n: bigint }[]>`
        SELECT array_to_string(queues, ',') AS queues, count(*) AS n FROM workers
        WHERE state = 'running' AND heartbeat_at > now() - make_interval(secs => ${env().WORKER_DEAD_AFTER_MS / 1000}::float8)
        GROUP BY 1`;
      for (const r of rows) this.set({ queues: r.queues }, Number(r.n));
    },
  });

  new Counter({
    name: "conveyor_attempts_total",
    help: "Finished attempts by job type and outcome (succeeded, failed, cancelled, lost, interrupted)",
    labelNames: ["type", "outcome"],
    registers: [registry],
    async collect() {
      this.reset();
      const rows = await db().$queryRaw<{ type: string; outcome: string; n: bigint }[]>`
        SELECT j.type, a.outcome, count(*) AS n FROM job_attempts a JOIN jobs j ON j.id = a.job_id
        WHERE a.outcome <> 'running' GROUP BY 1, 2`;
      for (const r of rows) this.inc({ type: r.type, outcome: r.outcome }, Number(r.n));
    },
  });

  new Counter({
    name: "conveyor_retries_total",
    help: "Attempts after the first (retries), by job type",
    labelNames: ["type"],
    registers: [registry],
    async collect() {
      this.reset();
      const rows = await db().$queryRaw<{ type: string; n: bigint }[]>`
        SELECT j.type, count(*) AS n FROM job_attempts a JOIN jobs j ON j.id = a.job_id
        WHERE a.attempt > 1 GROUP BY 1`;
      for (const r of rows) this.inc({ type: r.type }, Number(r.n));
    },
  });

  // A histogram aggregated in SQL: prom-client's Histogram only counts observations
  // made in this process, and attempts run in the workers. Formatted by the registry.
  registry.registerMetric({
    name: "conveyor_attempt_duration_seconds",
    help: "Duration of finished attempts by job type",
    type: "histogram",
    async get() {
      const ms = BUCKETS.map((b) => b * 1000);
      const [buckets, totals] = await Promise.all([
        db().$queryRaw<{ type: string; le: number; n: bigint }[]>`
          SELECT j.type, le, count(*) FILTER (WHERE a.duration_ms <= le) AS n
          FROM job_attempts a JOIN jobs j ON j.id = a.job_id CROSS JOIN unnest(${ms}::int[]) le
          WHERE a.duration_ms IS NOT NULL GROUP BY 1, 2`,
        db().$queryRaw<{ type: string; n: bigint; sum: number }[]>`
          SELECT j.type, count(*) AS n, coalesce(sum(a.duration_ms), 0)::float8 / 1000 AS sum
          FROM job_attempts a JOIN jobs j ON j.id = a.job_id WHERE a.duration_ms IS NOT NULL GROUP BY 1`,
      ]);
      const metricName = "conveyor_attempt_duration_seconds";
      const values = totals.flatMap((t) => [
        ...BUCKETS.map((le) => ({
          metricName: `${metricName}_bucket`,
          labels: { type: t.type, le },
          value: Number(buckets.find((b) => b.type === t.type && b.le === le * 1000)?.n ?? 0),
        })),
        { metricName: `${metricName}_bucket`, labels: { type: t.type, le: "+Inf" }, value: Number(t.n) },
        { metricName: `${metricName}_sum`, labels: { type: t.type }, value: t.sum },
        { metricName: `${metricName}_count`, labels: { type: t.type }, value: Number(t.n) },
      ]);
      return {
        name: "conveyor_attempt_duration_seconds",
        help: "Duration of finished attempts by job type",
        type: "histogram",
        values,
        aggregator: "sum",
      };
    },
    reset() {},
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
  } as any);

  return registry;
}

let registry: Registry | undefined;

/** Who may scrape: a platform admin, or a bearer carrying METRICS_TOKEN. */
export function authorizeMetrics(principal: Principal | null, bearer: string | null): void {
  const token = env().METRICS_TOKEN;
  // Compared as equal-length digests: neither the token's length nor its content leaks through timing.
  const digest = (s: string) => createHash("sha256").update(s).digest();
  if (token && bearer && timingSafeEqual(digest(bearer), digest(token))) return;
  if (principal?.isPlatformAdmin) return;
  if (!principal && !bearer) throw new AppError("unauthorized", "Metrics need a platform admin or the metrics token");
  throw new AppError("forbidden", "Metrics are for platform admins and the metrics token");
}

/** The exposition text and its content type. */
export async function renderMetrics(): Promise<{ body: string; contentType: string }> {
  registry ??= build();
  return { body: await registry.metrics(), contentType: registry.contentType };
}
