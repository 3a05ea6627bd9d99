/**
 * Prometheus metrics (`GET /api/metrics`, prom-client). Everything is read
 * from the database at scrape time, so any app process answers for the whole
 * fleet: queue depth, oldest waiting job, dead letters, live workers, the
 * health signals per queue and tenant (`./health`) with their thresholds, and
 * attempts with their durations. Counters and the histogram are read from the
 * statistics rollup's running totals (`readStatTotals`), which pruning the job
 * history never lowers; they lag by up to one rollup tick (STATS_ROLLUP_MS).
 * One scrape reads each source once (`Snapshot`), however many metrics use it, and all of them from
 * one database: the read replica when it is fit (lib/read-db.ts), else the primary; the replica's own
 * state and lag are exported too (`conveyor_replica_*`).
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { Counter, Gauge, Registry } from "prom-client";
import type { Principal } from "../auth/principal";
import type { PrismaClient } from "../db";
import { env } from "../env";
import { AppError } from "../errors";
import { replicaStatus, withReadDb, type ReplicaStatusDto } from "../read-db";
import { queueNames } from "../jobs/registry";
import {
  HEALTH_SIGNALS,
  SIGNAL_METRIC,
  TENANT_UTILISATION,
  computeHealth,
  readyScopes,
  thresholdsOf,
  type HealthRowDto,
  type ReadyScope,
} from "./health";
import { RUNTIME_BOUNDS_MS, readStatTotals, type StatTotals } from "./stats";

/** Attempt duration buckets (upper bounds, seconds): the rollup's runtime histogram's. */
const BUCKETS = RUNTIME_BOUNDS_MS.map((ms) => ms / 1000);

/** What one scrape reads, once, for all the metrics built from it. */
type Snapshot = {
  /** The database this scrape reads (the replica or the primary). */
  db: PrismaClient;
  replica: ReplicaStatusDto | null;
  ready: ReadyScope[];
  health: { queues: HealthRowDto[]; tenants: HealthRowDto[] };
  totals: StatTotals[];
  slugs: Map<string, string>;
};

async function takeSnapshot(from: PrismaClient): Promise<Snapshot> {
  const ready = await readyScopes(from);
  const [health, totals, tenants] = await Promise.all([
    computeHealth(null, ready, from),
    readStatTotals(from),
    from.tenant.findMany({ select: { id: true, slug: true } }),
  ]);
  return {
    db: from,
    replica: replicaStatus(),
    ready,
    health,
    totals,
    slugs: new Map(tenants.map((t) => [t.id, t.slug])),
  };
}

function build(snap: () => Snapshot): Registry {
  const registry = new Registry();

  new Gauge({
    name: "conveyor_jobs",
    help: "Jobs not finished, by queue, type and status (as of the last statistics rollup)",
    labelNames: ["queue", "type", "status"],
    registers: [registry],
    async collect() {
      this.reset();
      // The rollup's snapshot (as of its last tick, STATS_ROLLUP_MS): counting a large backlog
      // in `jobs` at every scrape would cost as much as the backlog is long.
      const rows = await snap().db.$queryRaw<{ queue: string; type: string; status: string; n: bigint }[]>`
        SELECT queue, type, state AS status, sum(n) AS n FROM job_state_counts
        WHERE state IN ('scheduled', 'queued', 'retrying', 'running') GROUP BY 1, 2, 3`;
      for (const r of rows) this.set({ queue: r.queue, type: r.type, status: r.status }, Number(r.n));
    },
  });

  new Gauge({
    name: "conveyor_oldest_waiting_seconds",
    help: "Age of the oldest due job that has not started, by queue and tenant",
    labelNames: ["queue", "tenant"],
    registers: [registry],
    collect() {
      this.reset();
      // Paused scopes included (the health signal conveyor_queue_oldest_ready_age_seconds leaves them out).
      const oldest = new Map<string, { queue: string; tenant: string; at: Date }>();
      for (const r of snap().ready) {
        const tenant = snap().slugs.get(r.tenantId) ?? r.tenantId;
        const key = `${r.queue}\u0000${tenant}`;
        const o = oldest.get(key);
        if (!o || r.oldestAt < o.at) oldest.set(key, { queue: r.queue, tenant, at: r.oldestAt });
      }
      for (const o of oldest.values())
        this.set({ queue: o.queue, tenant: o.tenant }, Math.max(0, (Date.now() - o.at.getTime()) / 1000));
    },
  });

  new Gauge({
    name: "conveyor_dead_letters",
    help: "Jobs in the dead-letter queue (failed, not discarded), by type (as of the last statistics rollup)",
    labelNames: ["type"],
    registers: [registry],
    async collect() {
      this.reset();
      const rows = await snap().db.$queryRaw<{ type: string; n: bigint }[]>`
        SELECT type, sum(n) AS n FROM job_state_counts WHERE state = 'dead' GROUP BY 1`;
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
      const rows = await snap().db.$queryRaw<{ queues: string; n: bigint }[]>`
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
    collect() {
      this.reset();
      for (const t of snap().totals)
        for (const outcome of ["succeeded", "failed", "cancelled", "lost", "interrupted"] as const)
          if (t[outcome]) this.inc({ type: t.type, outcome }, t[outcome]);
    },
  });

  new Counter({
    name: "conveyor_retries_total",
    help: "Attempts started after the first (retries), by job type",
    labelNames: ["type"],
    registers: [registry],
    collect() {
      this.reset();
      for (const t of snap().totals) if (t.retries) this.inc({ type: t.type }, t.retries);
    },
  });

  new Counter({
    name: "conveyor_attempts_started_total",
    help: "Attempts started (resumes after child jobs not counted), by queue and tenant",
    labelNames: ["queue", "tenant"],
    registers: [registry],
    collect() {
      this.reset();
      for (const t of snap().totals)
        if (t.started) this.inc({ queue: t.queue, tenant: snap().slugs.get(t.tenantId) ?? t.tenantId }, t.started);
    },
  });

  new Counter({
    name: "conveyor_dead_letters_created_total",
    help: "Jobs that reached the dead-letter queue, by queue and tenant",
    labelNames: ["queue", "tenant"],
    registers: [registry],
    collect() {
      this.reset();
      for (const t of snap().totals)
        if (t.dead) this.inc({ queue: t.queue, tenant: snap().slugs.get(t.tenantId) ?? t.tenantId }, t.dead);
    },
  });

  // The health signals: one gauge per signal and scope, from the same numbers as the console's Health panel.
  for (const signal of HEALTH_SIGNALS) {
    for (const scope of ["queue", "tenant"] as const) {
      new Gauge({
        name: `conveyor_${scope}_${SIGNAL_METRIC[signal]}`,
        help: `Health signal ${signal} per queue${scope === "tenant" ? " and tenant" : ""} (see docs/OPERATIONS.md)`,
        labelNames: scope === "queue" ? ["queue"] : ["queue", "tenant"],
        registers: [registry],
        collect() {
          this.reset();
          const rows = scope === "queue" ? snap().health.queues : snap().health.tenants;
          for (const r of rows) {
            const value = r.signals[signal].value;
            // Nothing to measure (no starts in the window, no slots): no sample, rather than a made-up zero.
            if (value === null) continue;
            this.set(r.tenant ? { queue: r.queue, tenant: r.tenant.slug } : { queue: r.queue }, value);
          }
        },
      });
    }
  }

  new Gauge({
    name: "conveyor_queue_health_threshold",
    help: "The console's thresholds per queue and signal: level warning or behind (alert rules compare against these)",
    labelNames: ["queue", "signal", "level"],
    registers: [registry],
    collect() {
      this.reset();
      for (const queue of new Set([...queueNames(), ...snap().health.queues.map((r) => r.queue)])) {
        const t = thresholdsOf(queue);
        for (const signal of HEALTH_SIGNALS)
          for (const level of ["warning", "behind"] as const)
            this.set({ queue, signal: SIGNAL_METRIC[signal], level }, t[signal][level]);
      }
    },
  });

  new Gauge({
    name: "conveyor_tenant_health_threshold",
    help: "Thresholds of the per-tenant signals that differ from the queue's: utilisation of the tenant's cap",
    labelNames: ["signal", "level"],
    registers: [registry],
    collect() {
      this.reset();
      for (const level of ["warning", "behind"] as const)
        this.set({ signal: SIGNAL_METRIC.utilisation, level }, TENANT_UTILISATION[level]);
    },
  });

  new Gauge({
    name: "conveyor_queue_workers_live",
    help: "Live worker processes serving the queue (heartbeating within WORKER_DEAD_AFTER_MS)",
    labelNames: ["queue"],
    registers: [registry],
    collect() {
      this.reset();
      for (const r of snap().health.queues) this.set({ queue: r.queue }, r.liveWorkers ?? 0);
    },
  });

  new Gauge({
    name: "conveyor_queue_slots",
    help: "Job slots of the live workers serving the queue (shared with the other queues a worker serves)",
    labelNames: ["queue"],
    registers: [registry],
    collect() {
      this.reset();
      for (const r of snap().health.queues) this.set({ queue: r.queue }, r.capacity);
    },
  });

  new Gauge({
    name: "conveyor_queue_busy_slots",
    help: "Slots running a job, of the live workers serving the queue",
    labelNames: ["queue"],
    registers: [registry],
    collect() {
      this.reset();
      for (const r of snap().health.queues) this.set({ queue: r.queue }, r.busy);
    },
  });

  // The read replica (DATABASE_REPLICA_URL): no sample when none is configured, or for a value not
  // measured (its lag while it does not answer); prom-client's Gauge always has one without labels.
  const replicaGauge = (name: string, help: string, value: (r: ReplicaStatusDto) => number | null) =>
    registry.registerMetric({
      name,
      help,
      type: "gauge",
      get() {
        const r = snap().replica;
        const v = r ? value(r) : null;
        return { name, help, type: "gauge", values: v === null ? [] : [{ labels: {}, value: v }], aggregator: "omit" };
      },
      reset() {},
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
    } as any);
  replicaGauge("conveyor_replica_up", "1 when the read replica answered the last probe as a standby, else 0", (r) =>
    r.state === "ok" || r.state === "lagging" ? 1 : 0,
  );
  replicaGauge(
    "conveyor_replica_in_use",
    "1 when the console's and these metrics' reads go to the read replica, 0 when they fell back to the primary",
    (r) => (r.readsFrom === "replica" ? 1 : 0),
  );
  replicaGauge(
    "conveyor_replica_lag_seconds",
    "How far the read replica was behind the primary at the last probe (an upper bound; docs/OPERATIONS.md)",
    (r) => (r.lagMs === null ? null : r.lagMs / 1000),
  );
  replicaGauge(
    "conveyor_replica_lag_bytes",
    "WAL bytes flushed on the primary and not yet replayed on the read replica, at the last probe",
    (r) => r.lagBytes,
  );
  replicaGauge(
    "conveyor_replica_max_lag_seconds",
    "The bound past which reads fall back to the primary (DATABASE_REPLICA_MAX_LAG_MS)",
    (r) => r.maxLagMs / 1000,
  );

  // A histogram aggregated in SQL: prom-client's Histogram only counts observations
  // made in this process, and attempts run in the workers. Formatted by the registry.
  registry.registerMetric({
    name: "conveyor_attempt_duration_seconds",
    help: "Duration of finished attempts by job type",
    type: "histogram",
    get() {
      // Per type: the runtime histograms of succeeded and failed attempts, summed over tenants and queues.
      const byType = new Map<string, { hist: number[]; sumMs: number }>();
      for (const t of snap().totals) {
        const h = byType.get(t.type) ?? { hist: [], sumMs: 0 };
        t.runtimeHist.forEach((n, i) => (h.hist[i] = (h.hist[i] ?? 0) + n));
        h.sumMs += t.runtimeMs;
        byType.set(t.type, h);
      }
      const metricName = "conveyor_attempt_duration_seconds";
      const values = [...byType].flatMap(([type, h]) => {
        const count = h.hist.reduce((a, b) => a + b, 0);
        if (!count) return [];
        let cumulative = 0;
        return [
          // The rollup's buckets are [lower, upper): `le` here reads as "below".
          ...BUCKETS.map((le, i) => ({
            metricName: `${metricName}_bucket`,
            labels: { type, le },
            value: (cumulative += h.hist[i] ?? 0),
          })),
          { metricName: `${metricName}_bucket`, labels: { type, le: "+Inf" }, value: count },
          { metricName: `${metricName}_sum`, labels: { type }, value: h.sumMs / 1000 },
          { metricName: `${metricName}_count`, labels: { type }, value: count },
        ];
      });
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
let snapshot: Snapshot | undefined;

function current(): Snapshot {
  if (!snapshot) throw new Error("metrics read outside a scrape");
  return snapshot;
}

/** Every metric name registered: the alert rules' test checks their expressions against these. */
export function metricNames(): string[] {
  registry ??= build(current);
  return registry.getMetricsAsArray().map((m) => m.name);
}

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
  const reg = (registry ??= build(current));
  // On the replica when it is fit; a scrape that fails there is taken again on the primary.
  return withReadDb(null, async (from) => {
    // Concurrent scrapes each take their own snapshot; a metric reads whichever is newest, all of them fresh.
    snapshot = await takeSnapshot(from);
    return { body: await reg.metrics(), contentType: reg.contentType };
  });
}
