/**
 * The console overview and the rollup that feeds it. The overview never scans
 * the jobs table: every STATS_ROLLUP_MS one worker (an advisory lock picks it)
 *  - recomputes per-minute counts of finished attempts and a runtime histogram
 *    for the minutes since the last tick (and the two before, so attempts that
 *    committed late are counted) into `job_stats_minute`, kept 8 days;
 *  - snapshots how many jobs wait, run or are dead, and the oldest queued one,
 *    per tenant, queue and type into `job_state_counts`.
 * The overview reads those two small tables: counts are as of the last tick.
 * Each minute row also counts the attempts that started in it, the retries
 * among them and a start-latency histogram (the health signals, `./health`);
 * once a minute can no longer change it is folded into `job_stats_total`, the
 * running totals the Prometheus counters read, which never go backwards when
 * minute rows age out or retention prunes the attempt history.
 */
import { z } from "zod";
import type { Principal } from "../auth/principal";
import { db, Prisma } from "../db";
import { parseOrThrow } from "../errors";
import { maintenanceLocks, withMaintenanceLock } from "../maintenance";
import { consoleTenant } from "./console";
import { queueNameSchema } from "../jobs/registry";
/** Minute rows older than this are deleted by the rollup. */
const KEEP = "8 days";

/**
 * Upper bounds (ms, exclusive) of the runtime histogram's buckets; the last
 * bucket counts everything from the last bound up.
 */
export const RUNTIME_BOUNDS_MS = [
  10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 300_000, 900_000, 3_600_000,
] as const;

const duration = Prisma.sql`coalesce(a.duration_ms, extract(epoch FROM a.finished_at - a.started_at) * 1000)`;
/** A histogram over RUNTIME_BOUNDS_MS of `value` (ms) for the rows that match `filter`, as an aggregate. */
function histogramOf(value: string, filter: string): Prisma.Sql {
  return Prisma.raw(
    `ARRAY[${[...RUNTIME_BOUNDS_MS, Infinity]
      .map((upper, i) => {
        const lower = i === 0 ? null : RUNTIME_BOUNDS_MS[i - 1];
        const cond = [lower === null ? null : `${value} >= ${lower}`, upper === Infinity ? null : `${value} < ${upper}`]
          .filter(Boolean)
          .join(" AND ");
        return `count(*) FILTER (WHERE ${filter} AND ${cond})`;
      })
      .join(", ")}]::int[]`,
  );
}
// Runtimes of attempts that ran to an end: lost ones last until their lease ran out, cancelled ones are cut short.
const histogramSql = histogramOf(duration.sql, "a.outcome IN ('succeeded', 'failed')");
/** A first run of an attempt (not a resume after child jobs), with its ready time known (attempts since the health migration). */
const firstRun = "a.resume = 0";
// From when the job became due to when the attempt started; a resume does not wait in the queue again.
const startLatencyHistSql = histogramOf(
  "extract(epoch FROM a.started_at - a.ready_at) * 1000",
  `${firstRun} AND a.ready_at IS NOT NULL`,
);
/** Elementwise sum of a histogram column over grouped rows (those matching `filter`, when given). */
export function histogramSum(column: string, type: "int" | "bigint" | "float8" = "int", filter?: string): Prisma.Sql {
  const only = filter ? ` FILTER (WHERE ${filter})` : "";
  return Prisma.raw(
    `ARRAY[${[...RUNTIME_BOUNDS_MS, Infinity].map((_, i) => `coalesce(sum(${column}[${i + 1}])${only}, 0)`).join(", ")}]::${type}[]`,
  );
}
/** Elementwise sum of histograms, for grouping minute rows into wider bins. */
const histogramSumSql = histogramSum("runtime_hist");

export type RollupResult = {
  ran: boolean;
  from?: string;
  to?: string;
  minuteRows?: number;
  countRows?: number;
  /** False while a long gap is worked off a few hours per tick. */
  caughtUp?: boolean;
};

/** The most one tick recomputes: a long gap (workers down, or seed:big) is caught up over several ticks. */
const MAX_WINDOW_MS = 6 * 3_600_000;

/** One tick of the rollup. Safe to call from any number of processes: one works, the others return `ran: false`. */
export async function rollupStats(): Promise<RollupResult> {
  const run = await withMaintenanceLock(
    maintenanceLocks.statsRollup,
    async (tx): Promise<RollupResult> => {
      // The row is made by the migration; recreated here should anyone delete it.
      await tx.$executeRaw`
        INSERT INTO stats_rollup (id, rolled_to) VALUES (1, now() - interval '${Prisma.raw(KEEP)}') ON CONFLICT (id) DO NOTHING`;
      // The catch-up window: from the watermark (two minutes back at least, for late commits),
      // skipping ahead over any stretch in which no attempt finished (a fresh database, a long
      // idle spell): the first finished attempt since the watermark is one index probe.
      const [window] = await tx.$queryRaw<
        { from: Date; totalsTo: Date | null; to: Date; caughtUp: boolean; recentFrom: Date; recentTo: Date }[]
      >`
        WITH mark AS (
          SELECT greatest(least(rolled_to, now() - interval '2 minutes'), now() - interval '${Prisma.raw(KEEP)}') AS at,
                 totals_to
          FROM stats_rollup WHERE id = 1 FOR UPDATE
        ), w AS (
          SELECT date_trunc('minute', least(greatest(mark.at, coalesce(least(
                   (SELECT min(finished_at) FROM job_attempts WHERE finished_at >= mark.at),
                   (SELECT min(started_at) FROM job_attempts WHERE started_at >= mark.at)), now())),
                 now() - interval '2 minutes')) AS "from", mark.totals_to
          FROM mark
        )
        SELECT "from", totals_to AS "totalsTo",
               least(now(), "from" + make_interval(secs => ${MAX_WINDOW_MS / 1000}::float8)) AS "to",
               "from" + make_interval(secs => ${MAX_WINDOW_MS / 1000}::float8) >= now() AS "caughtUp",
               date_trunc('minute', now() - interval '2 minutes') AS "recentFrom",
               now() + interval '1 hour' AS "recentTo"
        FROM w`;
      if (!window) return { ran: false };
      const { from, to, caughtUp } = window;
      // While a long gap is caught up, the last minutes are recomputed too: the overview shows
      // what just ran at once, not after the catch-up (the windows never overlap).
      const windows: [Date, Date][] = caughtUp
        ? [[from, to]]
        : [
            [from, to],
            [window.recentFrom, window.recentTo],
          ];

      // Minutes before `from` are final (never recomputed again): fold those not yet folded into
      // the running totals, before any of them ages out below. Should the watermark ever move back
      // (by hand), minutes before totals_to are recomputed but neither folded again nor read.
      await tx.$executeRaw`
        INSERT INTO job_stats_total AS t (tenant_id, queue, type, succeeded, failed, cancelled, lost, interrupted, dead,
                                          started, retries, runtime_ms, runtime_hist)
        SELECT tenant_id, queue, type, sum(succeeded), sum(failed), sum(cancelled), sum(lost), sum(interrupted), sum(dead),
               sum(started), sum(retries), sum(runtime_ms)::bigint, ${histogramSum("runtime_hist", "bigint")}
        FROM job_stats_minute
        WHERE bucket < ${from} AND (${window.totalsTo}::timestamptz IS NULL OR bucket >= ${window.totalsTo}::timestamptz)
        GROUP BY 1, 2, 3
        ON CONFLICT (tenant_id, queue, type) DO UPDATE SET
          succeeded = t.succeeded + excluded.succeeded, failed = t.failed + excluded.failed,
          cancelled = t.cancelled + excluded.cancelled, lost = t.lost + excluded.lost,
          interrupted = t.interrupted + excluded.interrupted, dead = t.dead + excluded.dead,
          started = t.started + excluded.started, retries = t.retries + excluded.retries,
          runtime_ms = t.runtime_ms + excluded.runtime_ms,
          runtime_hist = ARRAY(SELECT coalesce(x, 0) + coalesce(y, 0)
                               FROM unnest(t.runtime_hist, excluded.runtime_hist) WITH ORDINALITY AS u(x, y, i) ORDER BY i)`;
      await tx.$executeRaw`
        UPDATE stats_rollup SET totals_to = greatest(coalesce(totals_to, ${from}), ${from}) WHERE id = 1`;

      await tx.$executeRaw`DELETE FROM job_stats_minute WHERE bucket < now() - interval '${Prisma.raw(KEEP)}'`;
      let minuteRows = 0;
      for (const [start, end] of windows) {
        await tx.$executeRaw`DELETE FROM job_stats_minute WHERE bucket >= ${start} AND bucket < ${end}`;
        minuteRows += await tx.$executeRaw`
          INSERT INTO job_stats_minute (bucket, tenant_id, queue, type, succeeded, failed, cancelled, dead, runtime_ms,
                                        runtime_hist, lost, interrupted)
          SELECT date_trunc('minute', a.finished_at), j.tenant_id, j.queue, j.type,
                 count(*) FILTER (WHERE a.outcome = 'succeeded'),
                 count(*) FILTER (WHERE a.outcome IN ('failed', 'lost', 'interrupted')),
                 count(*) FILTER (WHERE a.outcome = 'cancelled'),
                 count(*) FILTER (WHERE a.outcome IN ('failed', 'lost') AND j.status = 'failed' AND a.attempt = j.attempts),
                 coalesce(sum(${duration}) FILTER (WHERE a.outcome IN ('succeeded', 'failed')), 0)::bigint,
                 ${histogramSql},
                 count(*) FILTER (WHERE a.outcome = 'lost'),
                 count(*) FILTER (WHERE a.outcome = 'interrupted')
          FROM job_attempts a JOIN jobs j ON j.id = a.job_id
          WHERE a.finished_at >= ${start} AND a.finished_at < ${end}
          GROUP BY 1, 2, 3, 4`;
        // The same minutes by when attempts started: starts, retries, start latency.
        minuteRows += await tx.$executeRaw`
          INSERT INTO job_stats_minute AS m (bucket, tenant_id, queue, type, started, retries, start_latency_hist)
          SELECT date_trunc('minute', a.started_at), j.tenant_id, j.queue, j.type,
                 count(*) FILTER (WHERE ${Prisma.raw(firstRun)}),
                 count(*) FILTER (WHERE ${Prisma.raw(firstRun)} AND a.attempt > 1),
                 ${startLatencyHistSql}
          FROM job_attempts a JOIN jobs j ON j.id = a.job_id
          WHERE a.started_at >= ${start} AND a.started_at < ${end}
          GROUP BY 1, 2, 3, 4
          ON CONFLICT (tenant_id, bucket, queue, type) DO UPDATE SET
            started = excluded.started, retries = excluded.retries, start_latency_hist = excluded.start_latency_hist`;
      }

      await tx.$executeRaw`DELETE FROM job_state_counts`;
      const countRows = await tx.$executeRaw`
        INSERT INTO job_state_counts (tenant_id, queue, type, state, n, oldest_at)
        SELECT tenant_id, queue, type, CASE WHEN status = 'failed' THEN 'dead' ELSE status::text END,
               count(*), min(CASE WHEN status = 'failed' THEN finished_at ELSE run_at END)
        FROM jobs
        WHERE status IN ('queued', 'scheduled', 'running', 'retrying') OR (status = 'failed' AND discarded_at IS NULL)
        GROUP BY 1, 2, 3, 4`;
      await tx.$executeRaw`UPDATE stats_rollup SET rolled_to = ${to}, counts_at = now() WHERE id = 1`;
      return { ran: true, from: from.toISOString(), to: to.toISOString(), minuteRows, countRows, caughtUp };
    },
    { timeoutMs: 120_000 },
  );
  return run.ran ? run.value : { ran: false };
}

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
  tenantId: string | null,
  f: { queue?: string; type?: string },
  /** Minutes back from the start of the current minute bin (exclusive of older bins). */
  minutes: number,
  width: string,
): Promise<Bin[]> {
  const rows = await db().$queryRaw<
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
 * hour and day. Operators (own tenant), platform admins (all, or one tenant).
 */
export async function getOverview(principal: Principal, raw: unknown): Promise<Overview> {
  const f = parseOrThrow(overviewSchema, raw);
  const tenantId = await consoleTenant(principal, f.tenant);
  const [counts, hourBins, dayBins, state] = await Promise.all([
    db().$queryRaw<{ queue: string; type: string; state: string; n: bigint; oldestAt: Date | null }[]>`
      SELECT queue, type, state, sum(n) AS n, min(oldest_at) AS "oldestAt"
      FROM job_state_counts
      WHERE (${tenantId}::uuid IS NULL OR tenant_id = ${tenantId}::uuid)
        AND (${f.queue ?? null}::text IS NULL OR queue = ${f.queue ?? null})
        AND (${f.type ?? null}::text IS NULL OR type = ${f.type ?? null})
      GROUP BY 1, 2, 3`,
    bins(tenantId, f, 60, "1 minute"),
    bins(tenantId, f, 24 * 60, "15 minutes"),
    db().statsRollup.findUnique({ where: { id: 1 } }),
  ]);

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
 * STATS_ROLLUP_MS late.
 */
export async function readStatTotals(): Promise<StatTotals[]> {
  const rows = await db().$queryRaw<
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
