/**
 * Records a failed attempt, fenced by its token, in one statement. The caller
 * says what the failure leads to (`failed`, `retrying` after `delayMs`, or
 * `cancelled`); a cancel request recorded meanwhile wins over all of them (a
 * job asked to stop is never scheduled again). A retry gives its admission slot
 * back and waits for admission when due; one without backoff keeps its place
 * in line. A shutdown-interrupted attempt (`interrupted`) raises the budget by
 * one. Returns the job's new status, or null when another attempt owns the job
 * (the attempt row is then closed as `lost`).
 */
import type { SqlClient } from "../../db";

export type FailureRecord = {
  errorClass: string;
  message: string;
  stack: string | null;
  /** What the failure leads to, before a cancel request is taken into account. */
  next: "failed" | "retrying" | "cancelled";
  /** With `retrying`: how long to wait before the next attempt. */
  delayMs: number;
  /** A shutdown ended the attempt: its budget grows by one. */
  interrupted: boolean;
};

export async function failJob(
  client: SqlClient,
  opts: { jobId: string; token: bigint; attemptId: bigint; failure: FailureRecord },
): Promise<"failed" | "retrying" | "cancelled" | null> {
  const f = opts.failure;
  const { rows } = await client.query<{ status: "failed" | "retrying" | "cancelled" | null }>(
    `WITH cur AS (
       SELECT id, cancel_requested_at IS NOT NULL AND $5::text <> 'cancelled' AS overruled,
              CASE WHEN cancel_requested_at IS NOT NULL THEN 'cancelled' ELSE $3::text END AS next,
              cancel_reason
       FROM jobs WHERE id = $1 AND fencing_token = $2 AND status = 'running'
       FOR UPDATE
     ), next AS (
       UPDATE jobs j SET
         status = cur.next::job_status,
         max_attempts = j.max_attempts + CASE WHEN $9::boolean THEN 1 ELSE 0 END,
         error_class = CASE WHEN cur.overruled THEN 'cancelled' ELSE $5 END,
         error_message = CASE WHEN cur.overruled THEN coalesce(cur.cancel_reason, 'Cancelled on request') ELSE $6 END,
         error_stack = CASE WHEN cur.overruled THEN NULL ELSE $7 END,
         lease_owner = NULL, lease_expires_at = NULL, resume_pending = false,
         admitted_at = CASE WHEN cur.next = 'retrying' THEN NULL ELSE j.admitted_at END,
         run_at = CASE WHEN cur.next = 'retrying' AND $4::float8 > 0
                       THEN now() + make_interval(secs => $4::float8 / 1000) ELSE j.run_at END,
         finished_at = CASE WHEN cur.next = 'retrying' THEN j.finished_at ELSE now() END,
         updated_at = now()
       FROM cur WHERE j.id = cur.id
       RETURNING j.status
     ), attempt AS (
       UPDATE job_attempts SET
         outcome = CASE WHEN NOT EXISTS (SELECT 1 FROM next) THEN 'lost'
                        WHEN $9::boolean THEN 'interrupted'
                        WHEN (SELECT status FROM next) = 'cancelled' THEN 'cancelled'
                        ELSE 'failed' END,
         finished_at = now(), duration_ms = (extract(epoch FROM now() - started_at) * 1000)::int,
         error_class = CASE WHEN (SELECT overruled FROM cur) THEN 'cancelled' ELSE $5 END,
         error_message = CASE WHEN (SELECT overruled FROM cur)
                              THEN coalesce((SELECT cancel_reason FROM cur), 'Cancelled on request') ELSE $6 END,
         error_stack = CASE WHEN (SELECT overruled FROM cur) THEN NULL ELSE $7 END
       WHERE id = $8 AND outcome = 'running' -- the reaper's verdict on a lost attempt stands
     )
     SELECT (SELECT status::text FROM next) AS status`,
    [
      opts.jobId,
      opts.token.toString(),
      f.next,
      Math.max(0, f.delayMs),
      f.errorClass,
      f.message,
      f.stack,
      opts.attemptId.toString(),
      f.interrupted,
    ],
  );
  return rows[0]?.status ?? null;
}
