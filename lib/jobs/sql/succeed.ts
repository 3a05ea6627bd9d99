/**
 * Records a successful attempt, fenced by its token: the job becomes
 * `succeeded` with its result, and its attempt row `succeeded` — or `lost`,
 * changing nothing else, when another attempt owns the job by now. With a
 * `commit` step (the task records its output, e.g. an export's file), it runs
 * in the same transaction and only if the fence held.
 */
import type pg from "pg";
import { inTransaction, type SqlClient } from "../../db";

const SUCCEED = `
  WITH done AS (
    UPDATE jobs SET status = 'succeeded', result = $3::jsonb, finished_at = now(), lease_owner = NULL,
           lease_expires_at = NULL, resume_pending = false,
           -- A success after failed attempts is a success: the attempts keep their errors.
           error_class = NULL, error_message = NULL, error_stack = NULL, updated_at = now()
    WHERE id = $1 AND fencing_token = $2 AND status = 'running'
    RETURNING id
  ), attempt AS (
    UPDATE job_attempts SET outcome = CASE WHEN EXISTS (SELECT 1 FROM done) THEN 'succeeded' ELSE 'lost' END,
           finished_at = now(), duration_ms = (extract(epoch FROM now() - started_at) * 1000)::int
    WHERE id = $4 AND outcome = 'running' -- the reaper's verdict on a lost attempt stands
  )
  SELECT EXISTS (SELECT 1 FROM done) AS ok`;

export async function succeedJob(
  from: pg.Pool,
  opts: {
    jobId: string;
    token: bigint;
    attemptId: bigint;
    result: unknown;
    /** Runs inside the transaction, only when the fence held. */
    commit?: (tx: SqlClient) => Promise<void>;
  },
): Promise<boolean> {
  const params = [opts.jobId, opts.token.toString(), JSON.stringify(opts.result ?? null), opts.attemptId.toString()];
  if (!opts.commit) {
    // The common case: one statement, one round trip.
    const { rows } = await from.query<{ ok: boolean }>(SUCCEED, params);
    return rows[0]?.ok === true;
  }
  const commit = opts.commit;
  return inTransaction(async (tx) => {
    const { rows } = await tx.query<{ ok: boolean }>(SUCCEED, params);
    const ok = rows[0]?.ok === true;
    if (ok) await commit(tx);
    return ok;
  }, from);
}
