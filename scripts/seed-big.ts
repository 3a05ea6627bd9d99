/**
 * npm run seed:big [-- --jobs 1000000] — adds job rows for sizing the operator
 * console: spread over 30 days (a denser last day, so the charts have data)
 * across the demo tenants and eight `load-N` tenants, every state and both job
 * types, each finished job with its attempt (dead ones with three). Then it
 * rolls the statistics up over the 8 days the overview keeps.
 *
 * The rows are written in SQL by the database itself, with triggers off
 * (`session_replication_role = replica`, so no notify per row and no admission
 * during the load; it needs a superuser, as the local and embedded databases
 * are); the rows those triggers would add elsewhere (the search text) it writes too. Waiting jobs are `probe` jobs that do nothing, so a running fleet can
 * work off the queued ones harmlessly; exports are all finished.
 */
import { parseArgs } from "node:util";
import { closeDb, pool } from "@/lib/db";
import { rollupStats } from "@/lib/ops/stats";
import { isDatabaseEmpty, seed } from "@/prisma/seed";
import { logger } from "@/lib/log";
import { migrate, openDatabase } from "./database";
import "@/lib/workloads";

const BATCH = 100_000;

async function main() {
  const { values } = parseArgs({ options: { jobs: { type: "string", default: "1000000" } } });
  const total = Number(values.jobs);
  if (!Number.isInteger(total) || total < 1 || total > 50_000_000) {
    throw new Error(`--jobs: must be a whole number from 1 to 50,000,000 (got ${values.jobs})`);
  }
  const database = await openDatabase();
  const started = Date.now();
  try {
    await migrate(database.url);
    if (await isDatabaseEmpty()) await seed();
    await pool().query(`
      INSERT INTO tenants (id, slug, name)
      SELECT gen_random_uuid(), 'load-' || i, 'Load tenant ' || i FROM generate_series(1, 8) i
      ON CONFLICT (slug) DO NOTHING`);
    const { rows: tenants } = await pool().query<{ id: string; slug: string }>(
      `SELECT id, slug FROM tenants WHERE slug IN ('acme', 'globex') OR slug LIKE 'load-%' ORDER BY slug`,
    );
    // Acme gets 40%, Globex 20%, the load tenants share the rest.
    const weights = tenants.map((t) => (t.slug === "acme" ? 8 : t.slug === "globex" ? 4 : 1));
    const ids = weights.flatMap((w, i) => Array<string>(w).fill(tenants[i]!.id));

    for (let done = 0; done < total; done += BATCH) {
      const n = Math.min(BATCH, total - done);
      const c = await pool().connect();
      try {
        await c.query("BEGIN");
        await c.query("SET LOCAL session_replication_role = replica");
        await c.query(
          `
          WITH g AS (
            SELECT i, ($1::uuid[])[1 + (hashint4(i) & 2147483647) % cardinality($1::uuid[])] AS tenant_id,
                   (hashint4(i * 7) & 2147483647) % 1000 AS roll,
                   -- 30% in the last day, the rest over 30 days
                   now() - CASE WHEN i % 10 < 3 THEN random() * interval '1 day' ELSE random() * interval '30 days' END AS created_at
            FROM generate_series($2::int, $3::int) i
          ), s AS (
            SELECT g.*,
                   CASE WHEN roll < 800 THEN 'succeeded' WHEN roll < 860 THEN 'failed' WHEN roll < 900 THEN 'cancelled'
                        WHEN roll < 920 THEN 'expired' WHEN roll < 940 THEN 'retrying' WHEN roll < 970 THEN 'scheduled'
                        ELSE 'queued' END::job_status AS status
            FROM g
          ), ins AS (
          INSERT INTO jobs (id, tenant_id, type, queue, status, input, input_hash, attempts, max_attempts, error_class,
                            error_message, run_at, created_at, updated_at, started_at, finished_at, discarded_at)
          SELECT gen_random_uuid(), tenant_id,
                 CASE WHEN status IN ('succeeded', 'failed', 'cancelled', 'expired') AND i % 3 > 0 THEN 'export' ELSE 'probe' END,
                 CASE WHEN status IN ('succeeded', 'failed', 'cancelled', 'expired') AND i % 3 > 0 AND i % 10 <> 0
                      THEN 'interactive' ELSE 'bulk' END,
                 status,
                 CASE WHEN status IN ('succeeded', 'failed', 'cancelled', 'expired') AND i % 3 > 0
                      THEN jsonb_build_object('dataset', (ARRAY['orders', 'customers', 'events'])[1 + i % 3],
                                              'format', CASE WHEN i % 2 = 0 THEN 'csv' ELSE 'jsonl' END,
                                              'compression', CASE WHEN i % 5 = 0 THEN 'gzip' ELSE 'none' END,
                                              'note', 'seed-big batch ' || (i / 1000))
                      ELSE jsonb_build_object('sleepMs', 0) END,
                 'seed-big-' || i,
                 CASE status WHEN 'failed' THEN 3 WHEN 'retrying' THEN 2 WHEN 'queued' THEN 0 WHEN 'scheduled' THEN 0 ELSE 1 END,
                 3,
                 CASE WHEN status IN ('failed', 'retrying') THEN (ARRAY['retryable', 'retryable', 'fatal'])[1 + i % 3] END,
                 CASE WHEN status IN ('failed', 'retrying') THEN
                   (ARRAY['timeout after ' || (1000 + i % 5000) || ' ms calling the warehouse',
                          'upstream answered 503',
                          'invalid row ' || i || ': value too long for column "note"'])[1 + i % 3] END,
                 CASE status WHEN 'retrying' THEN now() + (1 + i % 6) * interval '1 hour'
                             WHEN 'scheduled' THEN now() + (1 + i % 7) * interval '1 day'
                             ELSE created_at END,
                 created_at, created_at + interval '2 seconds',
                 CASE WHEN status NOT IN ('queued', 'scheduled') THEN created_at + interval '100 ms' END,
                 CASE WHEN status IN ('succeeded', 'failed', 'cancelled', 'expired')
                      THEN created_at + interval '100 ms' + (50 + (hashint4(i * 13) & 2147483647) % 4000) * interval '1 ms' END,
                 CASE WHEN status = 'failed' AND i % 3 = 0 THEN created_at + interval '1 hour' END
          FROM s
          RETURNING id, input, status, attempts, error_class, error_message, started_at, finished_at
          ), searched AS (
            -- The explorer's search text, which the triggers (off here) would have written.
            INSERT INTO job_search (job_id, text)
            SELECT id, input::text || ' ' || coalesce(error_message, '') FROM ins
          )
          INSERT INTO job_attempts (job_id, attempt, worker_id, fencing_token, started_at, finished_at, outcome,
                                    error_class, error_message, duration_ms)
          SELECT j.id, a, 'seed-big', a, j.started_at, coalesce(j.finished_at, j.started_at + interval '1 second'),
                 CASE WHEN a < j.attempts OR j.status IN ('failed', 'retrying') THEN 'failed'
                      WHEN j.status = 'cancelled' THEN 'cancelled' ELSE 'succeeded' END,
                 CASE WHEN a < j.attempts OR j.status IN ('failed', 'retrying') THEN j.error_class END,
                 CASE WHEN a < j.attempts OR j.status IN ('failed', 'retrying') THEN j.error_message END,
                 extract(epoch FROM coalesce(j.finished_at, j.started_at + interval '1 second') - j.started_at) * 1000
          FROM ins j, generate_series(1, j.attempts) a`,
          [ids, done + 1, done + n],
        );
        await c.query("COMMIT");
      } catch (err) {
        await c.query("ROLLBACK");
        throw err;
      } finally {
        c.release();
      }
      logger.info(`[seed:big] ${done + n} of ${total} jobs`);
    }
    await pool().query("ANALYZE jobs; ANALYZE job_attempts");
    // The quota counts, which the triggers (off here) would have kept.
    await pool().query("SELECT conveyor_open_job_counts_rebuild()");
    // Roll up the whole kept window, not only since the last tick.
    await pool().query(`UPDATE stats_rollup SET rolled_to = now() - interval '8 days' WHERE id = 1`);
    // A few hours per tick; a running worker may hold the lock for a moment.
    let r = await rollupStats();
    let minuteRows = r.minuteRows ?? 0;
    while (!r.ran || !r.caughtUp) {
      r = await rollupStats();
      minuteRows += r.minuteRows ?? 0;
    }
    const { rows } = await pool().query<{ n: string }>("SELECT count(*) AS n FROM jobs");
    logger.info(
      `[seed:big] done in ${((Date.now() - started) / 1000).toFixed(0)} s: the database holds ${Number(rows[0]!.n).toLocaleString("en-US")} jobs; ${minuteRows} statistics rows rolled up`,
    );
  } finally {
    await closeDb();
    await database.stop();
  }
}

main().catch((err: Error) => {
  logger.fatal({ err }, `[seed:big] failed: ${err.message}`);
  process.exit(1);
});
