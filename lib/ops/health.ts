/**
 * Knowing when it falls behind: the health signals per queue and per tenant,
 * each with its thresholds and a state (ok, warning, behind). The console's
 * Health panel and the Prometheus gauges (`./metrics`) both read
 * `computeHealth`, so what the console calls "behind" is what the alert
 * rules in deploy/alerts.yaml fire on (they compare against the thresholds
 * exported as `conveyor_queue_health_threshold`).
 *
 * - Oldest ready age: now − run_at of the oldest job that is queued or
 *   retrying with its run_at passed, in a scope that is not paused (a paused
 *   backlog waits by an operator's choice; more workers would not help it).
 *   Live from `jobs`, one index probe per (queue, tenant, type).
 * - Start latency p95: over attempts started in the last HEALTH_WINDOW_MINUTES,
 *   from when the job became due (its run_at: creation, the scheduled time or
 *   the end of a retry's backoff) to the attempt's start; time held by a pause
 *   counts. From the rollup's start-latency histograms (`./stats`).
 * - Utilisation: per queue, busy slots ÷ slots of the live workers that serve
 *   it (a worker's slots are shared by all the queues it serves, so a busy
 *   slot is busy for each). Per tenant: jobs admitted or running ÷ its cap in
 *   the queue (at its cap a tenant waits by design, whatever the fleet does).
 * - Retry rate: attempts after the first ÷ attempts, started in the window.
 * - Dead-letter growth: jobs that reached the dead-letter queue in the last hour.
 */
import { z } from "zod";
import type { Principal } from "../auth/principal";
import { db, type PrismaClient } from "../db";
import { env } from "../env";
import { parseOrThrow } from "../errors";
import { withReadDb } from "../read-db";
import { queueNames, queueSpec } from "../jobs/registry";
import type { Threshold } from "../jobs/task";
import { consoleTenant } from "./console";
import { histogramSum, quantileOf } from "./stats";

/** Minutes the start latency and retry rate look back over (minute bins, the current one included). */
export const HEALTH_WINDOW_MINUTES = 5;
/** Minutes the dead-letter growth looks back over. */
export const DEAD_LETTER_WINDOW_MINUTES = 60;

export const HEALTH_SIGNALS = [
  "oldestReadyAge",
  "startLatencyP95",
  "utilisation",
  "retryRate",
  "deadLettersPerHour",
] as const;
export type HealthSignal = (typeof HEALTH_SIGNALS)[number];

/** The suffix of each signal's gauge (`conveyor_queue_<suffix>`, `conveyor_tenant_<suffix>`). */
export const SIGNAL_METRIC: Record<HealthSignal, string> = {
  oldestReadyAge: "oldest_ready_age_seconds",
  startLatencyP95: "start_latency_p95_seconds",
  utilisation: "utilisation_ratio",
  retryRate: "retry_ratio",
  deadLettersPerHour: "dead_letters_last_hour",
};

export type { Threshold };

const shared = {
  utilisation: { warning: 0.8, behind: 0.95 },
  retryRate: { warning: 0.1, behind: 0.25 },
  deadLettersPerHour: { warning: 1, behind: 20 },
};

/**
 * Thresholds per queue (seconds, ratios, dead letters per hour): the waiting-time ones
 * are the queue's own (its manifest's `health`: a user waits on interactive work, bulk
 * work may queue for minutes), the rest shared.
 */
export function healthThresholds(): Record<string, Record<HealthSignal, Threshold>> {
  return Object.fromEntries(queueNames().map((name) => [name, thresholdsOf(name)]));
}

/** A tenant's utilisation is of its cap: warning when nearly at it, behind at it. */
export const TENANT_UTILISATION: Threshold = { warning: 0.75, behind: 1 };

export function thresholdsOf(queue: string): Record<HealthSignal, Threshold> {
  // A queue nobody brings any more (its jobs are still on record): judged as bulk work.
  const spec = queueSpec(queue) ?? queueSpec("bulk")!;
  return { ...spec.health, ...shared };
}

export type HealthState = "ok" | "warning" | "behind";
export type SignalDto = Threshold & {
  /** Seconds, a ratio, or dead letters in the last hour; null when there is nothing to measure (no starts in the window). */
  value: number | null;
  state: HealthState;
};
export type HealthRowDto = {
  queue: string;
  /** Null on a queue's fleet-wide row. */
  tenant: { id: string; slug: string } | null;
  /** The worst of its signals' states. */
  state: HealthState;
  signals: Record<HealthSignal, SignalDto>;
  /** When the oldest ready job became due. */
  oldestReadyAt: string | null;
  /** Attempts and retries started in the window; dead letters of the last hour. */
  started: number;
  retries: number;
  deadLastHour: number;
  /** Queue rows: busy slots and slots of its live workers. Tenant rows: jobs admitted or running, and its cap. */
  busy: number;
  capacity: number;
  /** Queue rows: live workers serving it; null on tenant rows. */
  liveWorkers: number | null;
};
export type Health = {
  at: string;
  /** Up to when the rollup's statistics reach (start latency, retries, dead letters). */
  statsTo: string | null;
  windowMinutes: number;
  /** Fleet-wide per queue: platform admins only (empty for operators). */
  queues: HealthRowDto[];
  /** Per queue and tenant: the operator's own tenant, or (admins) every tenant or the one asked for. */
  tenants: HealthRowDto[];
};

/** What one (queue, tenant) measures before it is judged. */
type Raw = {
  oldestReadyAt: Date | null;
  started: number;
  retries: number;
  latencyHist: number[];
  deadLastHour: number;
  busy: number;
  capacity: number;
};

const stateRank: Record<HealthState, number> = { ok: 0, warning: 1, behind: 2 };

function judge(value: number | null, t: Threshold): SignalDto {
  const state: HealthState =
    value === null ? "ok" : value >= t.behind ? "behind" : value >= t.warning ? "warning" : "ok";
  return { value, state, ...t };
}

function row(
  queue: string,
  tenant: { id: string; slug: string } | null,
  r: Raw,
  now: number,
  liveWorkers: number | null,
): HealthRowDto {
  const t = thresholdsOf(queue);
  const p95 = quantileOf(r.latencyHist, 0.95);
  const signals: Record<HealthSignal, SignalDto> = {
    oldestReadyAge: judge(
      r.oldestReadyAt ? Math.max(0, Math.round((now - r.oldestReadyAt.getTime()) / 100) / 10) : 0,
      t.oldestReadyAge,
    ),
    startLatencyP95: judge(p95 === null ? null : p95 / 1000, t.startLatencyP95),
    // No slots at all (no live worker serves the queue): nothing can start, which is behind.
    utilisation:
      r.capacity > 0
        ? judge(Math.round((r.busy / r.capacity) * 1000) / 1000, tenant ? TENANT_UTILISATION : t.utilisation)
        : { value: null, state: tenant ? "ok" : "behind", ...(tenant ? TENANT_UTILISATION : t.utilisation) },
    retryRate: judge(r.started ? Math.round((r.retries / r.started) * 1000) / 1000 : null, t.retryRate),
    deadLettersPerHour: judge(r.deadLastHour, t.deadLettersPerHour),
  };
  const state = Object.values(signals).reduce<HealthState>(
    (worst, s) => (stateRank[s.state] > stateRank[worst] ? s.state : worst),
    "ok",
  );
  return {
    queue,
    tenant,
    state,
    signals,
    oldestReadyAt: r.oldestReadyAt?.toISOString() ?? null,
    started: r.started,
    retries: r.retries,
    deadLastHour: r.deadLastHour,
    busy: r.busy,
    capacity: r.capacity,
    liveWorkers,
  };
}

function emptyRaw(): Raw {
  return { oldestReadyAt: null, started: 0, retries: 0, latencyHist: [], deadLastHour: 0, busy: 0, capacity: 0 };
}

function addHist(into: number[], h: readonly number[]) {
  h.forEach((n, i) => (into[i] = (into[i] ?? 0) + n));
}

/** The oldest due job per queue, tenant and type, and whether a pause holds that scope. */
export type ReadyScope = { queue: string; tenantId: string; type: string; oldestAt: Date; paused: boolean };

/**
 * Per (queue, tenant, type) with a job due to run: its oldest run_at. A skip
 * scan over jobs_ready_idx: one index probe per scope, whatever the backlog.
 */
export async function readyScopes(from: PrismaClient = db()): Promise<ReadyScope[]> {
  return from.$queryRaw<ReadyScope[]>`
    WITH RECURSIVE k AS (
      (SELECT queue, tenant_id, type FROM jobs WHERE status IN ('queued', 'retrying')
       ORDER BY queue, tenant_id, type LIMIT 1)
      UNION ALL
      SELECT n.queue, n.tenant_id, n.type FROM k CROSS JOIN LATERAL (
        SELECT queue, tenant_id, type FROM jobs
        WHERE status IN ('queued', 'retrying') AND (queue, tenant_id, type) > (k.queue, k.tenant_id, k.type)
        ORDER BY queue, tenant_id, type LIMIT 1) n
    )
    SELECT queue, "tenantId", type, "oldestAt", conveyor_paused(queue, type, "tenantId") AS paused
    FROM (SELECT k.queue, k.tenant_id AS "tenantId", k.type,
                 (SELECT min(j.run_at) FROM jobs j
                  WHERE j.status IN ('queued', 'retrying') AND j.queue = k.queue AND j.tenant_id = k.tenant_id
                    AND j.type = k.type) AS "oldestAt"
          FROM k) s
    WHERE "oldestAt" <= now()`;
}

/**
 * Every health signal, fleet-wide per queue and per (queue, tenant), with no
 * authorization: for the metrics endpoint and `getHealth`. `tenantId` limits
 * the tenant rows to one tenant and lists each queue for it even when idle. `from`: the database
 * read (the primary, or the read replica: lib/read-db.ts).
 */
export async function computeHealth(
  tenantId: string | null = null,
  ready?: ReadyScope[],
  from: PrismaClient = db(),
): Promise<{ queues: HealthRowDto[]; tenants: HealthRowDto[]; statsTo: Date | null }> {
  const deadAfterSecs = env().WORKER_DEAD_AFTER_MS / 1000;
  const [scopes, stats, workers, running, admitted, caps, limits, rollup] = await Promise.all([
    ready ?? readyScopes(from),
    from.$queryRaw<
      { queue: string; tenantId: string; started: bigint; retries: bigint; hist: number[]; dead: bigint }[]
    >`
      SELECT queue, tenant_id AS "tenantId",
             coalesce(sum(started) FILTER (WHERE bucket >= w.since), 0) AS started,
             coalesce(sum(retries) FILTER (WHERE bucket >= w.since), 0) AS retries,
             ${histogramSum("start_latency_hist", "int", "bucket >= w.since")} AS hist,
             coalesce(sum(dead), 0) AS dead
      FROM job_stats_minute,
           (SELECT date_trunc('minute', now()) - make_interval(mins => ${HEALTH_WINDOW_MINUTES - 1}::int) AS since) w
      WHERE bucket >= date_trunc('minute', now()) - make_interval(mins => ${DEAD_LETTER_WINDOW_MINUTES - 1}::int)
      GROUP BY 1, 2`,
    from.$queryRaw<{ id: string; queues: string[] | null; concurrency: number }[]>`
      SELECT id, queues, concurrency FROM workers
      WHERE state IN ('running', 'stopping') AND heartbeat_at > now() - make_interval(secs => ${deadAfterSecs}::float8)`,
    from.$queryRaw<{ owner: string; n: bigint }[]>`
      SELECT lease_owner AS owner, count(*) AS n FROM jobs
      WHERE status = 'running' AND lease_owner IS NOT NULL GROUP BY 1`,
    from.$queryRaw<{ queue: string; tenantId: string; n: bigint }[]>`
      SELECT queue, tenant_id AS "tenantId", count(*) AS n FROM jobs
      WHERE admitted_at IS NOT NULL AND status IN ('queued', 'retrying', 'running') GROUP BY 1, 2`,
    from.$queryRaw<{ name: string; tenantCap: number }[]>`SELECT name, tenant_cap AS "tenantCap" FROM queues`,
    from.$queryRaw<{ queue: string; tenantId: string; maxRunning: number | null }[]>`
      SELECT queue, tenant_id AS "tenantId", max_running AS "maxRunning" FROM tenant_queue_limits`,
    from.statsRollup.findUnique({ where: { id: 1 } }),
  ]);

  const now = Date.now();
  const raws = new Map<string, { queue: string; tenantId: string; raw: Raw }>();
  const rawOf = (queue: string, tenant: string): Raw => {
    const key = `${queue}\u0000${tenant}`;
    let r = raws.get(key);
    if (!r) raws.set(key, (r = { queue, tenantId: tenant, raw: emptyRaw() }));
    return r.raw;
  };
  if (tenantId) for (const q of queueNames()) rawOf(q, tenantId);
  for (const s of scopes) {
    if (s.paused) continue;
    const r = rawOf(s.queue, s.tenantId);
    if (!r.oldestReadyAt || s.oldestAt < r.oldestReadyAt) r.oldestReadyAt = s.oldestAt;
  }
  for (const s of stats) {
    const r = rawOf(s.queue, s.tenantId);
    r.started = Number(s.started);
    r.retries = Number(s.retries);
    r.deadLastHour = Number(s.dead);
    r.latencyHist = s.hist.map(Number);
  }
  for (const a of admitted) rawOf(a.queue, a.tenantId).busy = Number(a.n);
  const capOf = new Map(caps.map((c) => [c.name, c.tenantCap]));
  for (const [, { queue, tenantId: t, raw }] of raws) {
    const limit = limits.find((l) => l.queue === queue && l.tenantId === t)?.maxRunning;
    raw.capacity = limit ?? capOf.get(queue) ?? 0;
  }

  const tenantIds = [...new Set([...raws.values()].map((r) => r.tenantId))];
  const slugs = new Map(
    (tenantIds.length
      ? await from.tenant.findMany({ where: { id: { in: tenantIds } }, select: { id: true, slug: true } })
      : []
    ).map((t) => [t.id, t.slug]),
  );

  // Fleet rows: every known queue, and any other a job or a worker names.
  const names = new Set<string>([...queueNames(), ...[...raws.values()].map((r) => r.queue)]);
  const runningOf = new Map(running.map((r) => [r.owner, Number(r.n)]));
  const queues = [...names].map((queue) => {
    const serving = workers.filter((w) => !w.queues?.length || w.queues.includes(queue));
    const fleet = emptyRaw();
    fleet.capacity = serving.reduce((n, w) => n + w.concurrency, 0);
    fleet.busy = serving.reduce((n, w) => n + Math.min(w.concurrency, runningOf.get(w.id) ?? 0), 0);
    for (const { queue: q, raw } of raws.values()) {
      if (q !== queue) continue;
      if (raw.oldestReadyAt && (!fleet.oldestReadyAt || raw.oldestReadyAt < fleet.oldestReadyAt))
        fleet.oldestReadyAt = raw.oldestReadyAt;
      fleet.started += raw.started;
      fleet.retries += raw.retries;
      fleet.deadLastHour += raw.deadLastHour;
      addHist(fleet.latencyHist, raw.latencyHist);
    }
    return row(queue, null, fleet, now, serving.length);
  });

  const tenants = [...raws.values()]
    .filter((r) => !tenantId || r.tenantId === tenantId)
    .map(({ queue, tenantId: t, raw }) => row(queue, { id: t, slug: slugs.get(t) ?? t }, raw, now, null))
    .sort((a, b) => a.queue.localeCompare(b.queue) || a.tenant!.slug.localeCompare(b.tenant!.slug));

  return { queues, tenants, statsTo: rollup?.countsAt ? rollup.rolledTo : null };
}

export const healthQuerySchema = z
  .object({
    /** Platform admins: one tenant's rows (id or slug). */
    tenant: z.string().trim().min(1).max(100).optional(),
  })
  .strict();

/**
 * The Health panel: platform admins get the fleet per queue and every tenant
 * (or the one asked for); operators their own tenant's rows only.
 */
export async function getHealth(principal: Principal, raw: unknown): Promise<Health> {
  const q = parseOrThrow(healthQuerySchema, raw);
  const tenantId = await consoleTenant(principal, q.tenant);
  const h = await withReadDb(principal, (rdb) => computeHealth(tenantId, undefined, rdb));
  return {
    at: new Date().toISOString(),
    statsTo: h.statsTo?.toISOString() ?? null,
    windowMinutes: HEALTH_WINDOW_MINUTES,
    queues: principal.isPlatformAdmin ? h.queues : [],
    tenants: h.tenants,
  };
}
