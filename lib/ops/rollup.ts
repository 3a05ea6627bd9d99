/**
 * The statistics rollup that feeds the console overview (lib/ops/stats.ts), the
 * health signals (./health) and the Prometheus counters (./metrics). Every
 * STATS_ROLLUP_MS one worker (an advisory lock picks it)
 *  - recomputes per-minute counts of finished attempts and a runtime histogram
 *    for the minutes since the last tick (and the two before, so attempts that
 *    committed late are counted) into `job_stats_minute`, kept 8 days;
 *  - snapshots how many jobs wait, run or are dead, and the oldest queued one,
 *    per tenant, queue and type into `job_state_counts`.
 * Each minute row also counts the attempts that started in it, the retries
 * among them and a start-latency histogram; once a minute can no longer change
 * it is folded into `job_stats_total`, the running totals the Prometheus
 * counters read, which never go backwards when minute rows age out or
 * retention prunes the attempt history.
 */
import { Prisma } from "../db";
import { maintenanceLocks, withMaintenanceLock } from "../maintenance";

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
