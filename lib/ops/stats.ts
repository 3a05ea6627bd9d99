/**
 * The console overview and the running totals, read from the tables the
 * rollup (./rollup.ts) writes. The overview never scans the jobs table: it
 * reads `job_stats_minute` and `job_state_counts`, so counts are as of the
 * rollup's last tick.
 */
import { z } from "zod";
import type { Principal } from "../auth/principal";
import { db, Prisma, type PrismaClient } from "../db";
import { parseOrThrow } from "../errors";
import { replicaStatus, withReadDb, type ReadSource, type ReplicaStatusDto } from "../read-db";
import { queueNameSchema } from "../jobs/registry";
import { consoleTenant } from "./console-tenant";
import { histogramSum, RUNTIME_BOUNDS_MS } from "./rollup";

export { histogramSum, rollupStats, RUNTIME_BOUNDS_MS, type RollupResult } from "./rollup";

/** Elementwise sum of histograms, for grouping minute rows into wider bins. */
const histogramSumSql = histogramSum("runtime_hist");

// ── The overview ─────────────────────────────────────────────────────────────

export const overviewSchema = z
  .object({
    /** Platform admins: a tenant's id or slug. */
    tenant: z.string().trim().min(1).max(100).optional(),
    queue: queueNameSchema().optional(),
    type: z.string().trim().min(1).max(100).optional(),
  })
  .strict();

type Window = { succeeded: number; failed: number; perMinute: number; failureRate: number | null };
export type OverviewRow = {
  queue: string;
  type: string;
  queued: number;
  scheduled: number;
  running: number;
  retrying: number;
  dead: number;
  /** When the oldest queued job became due. */
  oldestQueuedAt: string | null;
  last5m: Window;
  last1h: Window;
  /** Runtime of attempts finished in the last hour, from the histogram (bucket-interpolated). */
  p50Ms: number | null;
  p99Ms: number | null;
};
export type SeriesPoint = {
  at: string;
  succeeded: number;
  failed: number;
  dead: number;
  p50Ms: number | null;
  p99Ms: number | null;
};
export type Overview = {
  tenant: string | null;
  /** When the counts were taken and up to when the statistics reach (the last rollup tick). */
  countsAt: string | null;
  statsTo: string | null;
  rows: OverviewRow[];
  totals: Omit<OverviewRow, "queue" | "type" | "oldestQueuedAt" | "p50Ms" | "p99Ms"> & {
    oldestQueuedAt: string | null;
  };
  /** Last hour per minute, last day per 15 minutes. */
  series: { hour: SeriesPoint[]; day: SeriesPoint[] };
  /** Where this overview was read: the read replica, or the primary (no replica, or it is not fit, or the reader just wrote). */
  readFrom: ReadSource;
  /** The read replica's state and lag (DATABASE_REPLICA_URL); null when there is none. */
  replica: ReplicaStatusDto | null;
};

type Bin = { at: Date; queue: string; type: string; succeeded: number; failed: number; dead: number; hist: number[] };

/** The `q`-th quantile of a histogram, interpolated inside its bucket; null when empty. */
export function quantileOf(hist: readonly number[], q: number): number | null {
  const total = hist.reduce((a, b) => a + b, 0);
  if (!total) return null;
  const rank = q * total;
  let seen = 0;
  for (let i = 0; i < hist.length; i++) {
    const n = hist[i] ?? 0;
    if (n && seen + n >= rank) {
      const lower = i === 0 ? 0 : RUNTIME_BOUNDS_MS[i - 1]!;
      const upper = RUNTIME_BOUNDS_MS[i];
      if (upper === undefined) return lower;
      return Math.round(lower + ((rank - seen) / n) * (upper - lower));
    }
    seen += n;
  }
  return RUNTIME_BOUNDS_MS.at(-1)!;
}

function addHist(into: number[], h: readonly number[]) {
  h.forEach((n, i) => (into[i] = (into[i] ?? 0) + n));
}

/**
 * Totals of the last `n` minute bins (the current, partial one included) and
 * succeeded per minute over the time they cover: up to the rollup's last tick,
 * so a partial minute does not read as a slow one.
 */
function windowOf(minuteBins: Bin[], n: number, statsTo: Date | null): Window {
  const start = Math.floor(Date.now() / 60_000) * 60_000 - (n - 1) * 60_000;
  const mine = minuteBins.filter((b) => b.at.getTime() >= start);
  const succeeded = mine.reduce((a, b) => a + b.succeeded, 0);
  const failed = mine.reduce((a, b) => a + b.failed, 0);
  const end = Math.min(Date.now(), statsTo?.getTime() ?? Date.now());
  const minutes = Math.max(1, (end - start) / 60_000);
  return {
    succeeded,
    failed,
    perMinute: Math.round((succeeded / minutes) * 10) / 10,
    failureRate: succeeded + failed ? Math.round((failed / (succeeded + failed)) * 1000) / 1000 : null,
  };
}

async function bins(
  from: PrismaClient,
  tenantId: string | null,
  f: { queue?: string; type?: string },
  /** Minutes back from the start of the current minute bin (exclusive of older bins). */
  minutes: number,
  width: string,
): Promise<Bin[]> {
  const rows = await from.$queryRaw<
    { at: Date; queue: string; type: string; succeeded: bigint; failed: bigint; dead: bigint; hist: number[] }[]
  >`
    SELECT date_bin(${Prisma.raw(`'${width}'`)}::interval, bucket, '2000-01-01') AS at, queue, type,
           sum(succeeded) AS succeeded, sum(failed) AS failed, sum(dead) AS dead, ${histogramSumSql} AS hist
    FROM job_stats_minute
    WHERE bucket >= date_bin(${Prisma.raw(`'${width}'`)}::interval, now(), '2000-01-01')
                    - make_interval(mins => ${minutes}::int) + ${Prisma.raw(`'${width}'`)}::interval
      AND (${tenantId}::uuid IS NULL OR tenant_id = ${tenantId}::uuid)
      AND (${f.queue ?? null}::text IS NULL OR queue = ${f.queue ?? null})
      AND (${f.type ?? null}::text IS NULL OR type = ${f.type ?? null})
    GROUP BY 1, 2, 3`;
  return rows.map((r) => ({
    ...r,
    succeeded: Number(r.succeeded),
    failed: Number(r.failed),
    dead: Number(r.dead),
  }));
}

function series(rows: Bin[], points: number, widthMs: number): SeriesPoint[] {
  const end = Math.floor(Date.now() / widthMs) * widthMs;
  const byAt = new Map<number, { succeeded: number; failed: number; dead: number; hist: number[] }>();
  for (const r of rows) {
    const p = byAt.get(r.at.getTime()) ?? { succeeded: 0, failed: 0, dead: 0, hist: [] };
    p.succeeded += r.succeeded;
    p.failed += r.failed;
    p.dead += r.dead;
    addHist(p.hist, r.hist);
    byAt.set(r.at.getTime(), p);
  }
  return Array.from({ length: points }, (_, i) => {
    const at = end - (points - 1 - i) * widthMs;
    const p = byAt.get(at);
    return {
      at: new Date(at).toISOString(),
      succeeded: p?.succeeded ?? 0,
      failed: p?.failed ?? 0,
      dead: p?.dead ?? 0,
      p50Ms: p ? quantileOf(p.hist, 0.5) : null,
      p99Ms: p ? quantileOf(p.hist, 0.99) : null,
    };
  });
}

/**
 * Per queue and job type: how many jobs are queued, scheduled, running,
 * retrying and dead, the oldest queued one, throughput and failure rate over
 * the last 5 minutes and hour, runtime p50 and p99; and charts of the last
 * hour and day; and the read replica's lag when there is one (the overview reads it when it is
 * fit: lib/read-db.ts). Operators (own tenant), platform admins (all, or one tenant).
 */
export async function getOverview(principal: Principal, raw: unknown): Promise<Overview> {
  const f = parseOrThrow(overviewSchema, raw);
  const tenantId = await consoleTenant(principal, f.tenant);
  const [[counts, hourBins, dayBins, state], readFrom] = await withReadDb(
    principal,
    async (rdb, source) =>
      [
        await Promise.all([
          rdb.$queryRaw<{ queue: string; type: string; state: string; n: bigint; oldestAt: Date | null }[]>`
      SELECT queue, type, state, sum(n) AS n, min(oldest_at) AS "oldestAt"
      FROM job_state_counts
      WHERE (${tenantId}::uuid IS NULL OR tenant_id = ${tenantId}::uuid)
        AND (${f.queue ?? null}::text IS NULL OR queue = ${f.queue ?? null})
        AND (${f.type ?? null}::text IS NULL OR type = ${f.type ?? null})
      GROUP BY 1, 2, 3`,
          bins(rdb, tenantId, f, 60, "1 minute"),
          bins(rdb, tenantId, f, 24 * 60, "15 minutes"),
          rdb.statsRollup.findUnique({ where: { id: 1 } }),
        ]),
        source,
      ] as const,
  );

  const statsTo = state?.countsAt ? state.rolledTo : null;
  const keys = new Map<string, { queue: string; type: string }>();
  for (const r of [...counts, ...hourBins]) keys.set(`${r.queue}\u0000${r.type}`, { queue: r.queue, type: r.type });
  const rows: OverviewRow[] = [...keys.values()]
    .map(({ queue, type }) => {
      const c = (s: string) => counts.find((r) => r.queue === queue && r.type === type && r.state === s);
      const mine = hourBins.filter((b) => b.queue === queue && b.type === type);
      const hist: number[] = [];
      for (const b of mine) addHist(hist, b.hist);
      return {
        queue,
        type,
        queued: Number(c("queued")?.n ?? 0),
        scheduled: Number(c("scheduled")?.n ?? 0),
        running: Number(c("running")?.n ?? 0),
        retrying: Number(c("retrying")?.n ?? 0),
        dead: Number(c("dead")?.n ?? 0),
        oldestQueuedAt: c("queued")?.oldestAt?.toISOString() ?? null,
        last5m: windowOf(mine, 5, statsTo),
        last1h: windowOf(mine, 60, statsTo),
        p50Ms: quantileOf(hist, 0.5),
        p99Ms: quantileOf(hist, 0.99),
      };
    })
    .sort((a, b) => a.queue.localeCompare(b.queue) || a.type.localeCompare(b.type));

  const oldest = rows
    .map((r) => r.oldestQueuedAt)
    .filter((x): x is string => x !== null)
    .sort()[0];
  const sum = (k: "queued" | "scheduled" | "running" | "retrying" | "dead") => rows.reduce((a, r) => a + r[k], 0);
  return {
    tenant: tenantId,
    countsAt: state?.countsAt?.toISOString() ?? null,
    statsTo: statsTo?.toISOString() ?? null,
    rows,
    totals: {
      queued: sum("queued"),
      scheduled: sum("scheduled"),
      running: sum("running"),
      retrying: sum("retrying"),
      dead: sum("dead"),
      oldestQueuedAt: oldest ?? null,
      last5m: windowOf(hourBins, 5, statsTo),
      last1h: windowOf(hourBins, 60, statsTo),
    },
    series: { hour: series(hourBins, 60, 60_000), day: series(dayBins, 96, 15 * 60_000) },
    readFrom,
    replica: replicaStatus(),
  };
}

// ── Running totals, for counters ─────────────────────────────────────────────

export type StatTotals = {
  tenantId: string;
  queue: string;
  type: string;
  succeeded: number;
  /** Failed attempts, lost and interrupted ones not included. */
  failed: number;
  cancelled: number;
  lost: number;
  interrupted: number;
  /** Jobs that reached the dead-letter queue. */
  dead: number;
  /** Attempts started (resumes not counted), and those after the first. */
  started: number;
  retries: number;
  runtimeMs: number;
  /** Succeeded and failed attempts per runtime bucket (RUNTIME_BOUNDS_MS, then the rest). */
  runtimeHist: number[];
};

/**
 * Everything the rollup ever counted, per tenant, queue and type: the folded
 * totals plus the minutes not yet folded, read in one statement. Only grows
 * (pruning history or aging out minute rows takes nothing away), so it feeds
 * Prometheus counters. Attempts counted by the rollup's tick: up to
 * STATS_ROLLUP_MS late. `from`: the database to read (the metrics read the replica when it is fit).
 */
export async function readStatTotals(from: PrismaClient = db()): Promise<StatTotals[]> {
  const rows = await from.$queryRaw<
    (Omit<StatTotals, "runtimeHist"> & { runtimeHist: (bigint | number)[] } & Record<string, unknown>)[]
  >`
    WITH s AS (
      SELECT tenant_id, queue, type, succeeded, failed, cancelled, lost, interrupted, dead, started, retries,
             runtime_ms, runtime_hist
      FROM job_stats_total
      UNION ALL
      SELECT m.tenant_id, m.queue, m.type, m.succeeded, m.failed, m.cancelled, m.lost, m.interrupted, m.dead,
             m.started, m.retries, m.runtime_ms, m.runtime_hist::bigint[]
      FROM job_stats_minute m
      -- A bound the planner sees as one value: a range scan of job_stats_minute_bucket_idx.
      WHERE m.bucket >= coalesce((SELECT totals_to FROM stats_rollup WHERE id = 1), '-infinity')
    )
    SELECT tenant_id AS "tenantId", queue, type,
           sum(succeeded)::float8 AS succeeded, sum(failed - lost - interrupted)::float8 AS failed,
           sum(cancelled)::float8 AS cancelled, sum(lost)::float8 AS lost, sum(interrupted)::float8 AS interrupted,
           sum(dead)::float8 AS dead, sum(started)::float8 AS started, sum(retries)::float8 AS retries,
           sum(runtime_ms)::float8 AS "runtimeMs", ${histogramSum("runtime_hist", "float8")} AS "runtimeHist"
    FROM s GROUP BY 1, 2, 3`;
  return rows.map((r) => ({ ...r, runtimeHist: r.runtimeHist.map(Number) }));
}
