/**
 * Records a successful attempt, fenced by its token: the job becomes
 * `succeeded` with its result, and its attempt row `succeeded` — or `lost`,
 * changing nothing else, when another attempt owns the job by now. With a
 * `commit` step (the task records its output, e.g. an export's file), it runs
 * in the same transaction and only if the fence held. Without one, several
 * successes go in one statement (`succeedJobs`, the runner's batches).
 */
import type pg from "pg";
import { inTransaction, prepared, type SqlClient } from "../../db";

// `status::text`: see lib/jobs/sql/claim.ts (the primary key, whatever the statistics).
const SUCCEED = `
  WITH req AS (
    SELECT * FROM unnest($1::uuid[], $2::bigint[], $3::jsonb[], $4::bigint[]) AS r(id, token, result, attempt_id)
  ), done AS (
    UPDATE jobs SET status = 'succeeded', result = req.result, finished_at = now(), lease_owner = NULL,
           lease_expires_at = NULL, resume_pending = false,
           -- A success after failed attempts is a success: the attempts keep their errors.
           error_class = NULL, error_message = NULL, error_stack = NULL, updated_at = now()
    FROM req
    WHERE jobs.id = ANY($1::uuid[]) AND jobs.id = req.id AND jobs.fencing_token = req.token
      AND jobs.status::text = 'running'
    RETURNING jobs.id
  ), attempt AS (
    UPDATE job_attempts SET outcome = CASE WHEN req.id IN (SELECT id FROM done) THEN 'succeeded' ELSE 'lost' END,
           finished_at = now(), duration_ms = (extract(epoch FROM now() - started_at) * 1000)::int
    FROM req
    WHERE job_attempts.id = ANY($4::bigint[]) AND job_attempts.id = req.attempt_id
      AND job_attempts.outcome = 'running' -- the reaper's verdict on a lost attempt stands
  )
  SELECT req.id::text AS id FROM req WHERE req.id IN (SELECT id FROM done)`;

export type SuccessRecord = { jobId: string; token: bigint; attemptId: bigint; result: unknown };

/** Records several successes in one statement; true for each whose fence held. */
export async function succeedJobs(client: SqlClient, records: SuccessRecord[]): Promise<boolean[]> {
  const { rows } = await client.query<{ id: string }>({
    ...prepared(SUCCEED),
    values: [
      records.map((r) => r.jobId),
      records.map((r) => r.token.toString()),
      records.map((r) => JSON.stringify(r.result ?? null)),
      records.map((r) => r.attemptId.toString()),
    ],
  });
  const ok = new Set(rows.map((r) => r.id.toLowerCase()));
  return records.map((r) => ok.has(r.jobId.toLowerCase()));
}

export async function succeedJob(
  from: pg.Pool,
  opts: SuccessRecord & {
    /** Runs inside the transaction, only when the fence held. */
    commit?: (tx: SqlClient) => Promise<void>;
  },
): Promise<boolean> {
  // The common case: one statement, one round trip.
  if (!opts.commit) return (await succeedJobs(from, [opts]))[0]!;
  const commit = opts.commit;
  return inTransaction(async (tx) => {
    const ok = (await succeedJobs(tx, [opts]))[0]!;
    if (ok) await commit(tx);
    return ok;
  }, from);
}
