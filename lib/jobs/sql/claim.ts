/**
 * Claims a job for one attempt, in one statement: status `running`, a new
 * fencing token, the lease, and the attempt row. A job woken after its
 * children ended resumes its attempt (same number, `resume` + 1) instead of
 * starting a new one. Only an admitted, unpaused, uncancelled job is claimed,
 * so a stale or duplicate dispatch is harmless: it claims nothing. The
 * attempt row keeps the job's run_at as `ready_at` (start latency).
 */
import type { SqlClient } from "../../db";

export type ClaimedJob = {
  id: string;
  tenantId: string;
  type: string;
  input: unknown;
  attempt: number;
  resume: number;
  maxAttempts: number;
  fencingToken: bigint;
  createdById: string | null;
  priority: number;
  checkpoint: unknown;
  attemptId: bigint;
  queue: string;
  /** The W3C trace context stored when the job was made (lib/tracing.ts), or null. */
  traceContext: unknown;
};

export async function claimJob(
  client: SqlClient,
  opts: { jobId: string; type: string; workerId: string; leaseMs: number },
): Promise<ClaimedJob | null> {
  const { rows } = await client.query<
    Omit<ClaimedJob, "fencingToken" | "attemptId"> & { fencingToken: string; attemptId: string }
  >(
    `WITH claimed AS (
       UPDATE jobs SET
         status = 'running',
         attempts = attempts + CASE WHEN resume_pending THEN 0 ELSE 1 END,
         resumes = CASE WHEN resume_pending THEN resumes + 1 ELSE 0 END,
         resume_pending = false,
         fencing_token = fencing_token + 1,
         lease_owner = $2,
         lease_expires_at = now() + make_interval(secs => $3::float8),
         heartbeat_at = now(),
         started_at = coalesce(started_at, now()),
         updated_at = now()
       WHERE id = $1 AND type = $4 AND status IN ('queued', 'retrying') AND cancel_requested_at IS NULL
         AND run_at <= now() + interval '1 second'
         -- Only an admitted job starts: a stale dispatch (the job was taken back by a
         -- pause or the reaper since) is refused. The row's re-check after a concurrent
         -- update sees admitted_at, which a pause clears in the same transaction.
         AND admitted_at IS NOT NULL
         -- A pause that came after admission: the dispatch was already fetched.
         AND NOT conveyor_paused(queue, type, tenant_id)
       RETURNING id, tenant_id, type, input, attempts, resumes, max_attempts, fencing_token, created_by_id,
                 priority, checkpoint, run_at, queue, trace_context
     ), attempt AS (
       -- ready_at: when the job became due, for the start latency the health signals report.
       INSERT INTO job_attempts (job_id, attempt, resume, worker_id, fencing_token, started_at, ready_at)
       SELECT id, attempts, resumes, $2, fencing_token, now(), run_at FROM claimed
       RETURNING id
     )
     SELECT c.id, c.tenant_id AS "tenantId", c.type, c.input, c.attempts AS attempt, c.resumes AS resume,
            c.max_attempts AS "maxAttempts", c.fencing_token AS "fencingToken", c.created_by_id AS "createdById",
            c.priority, c.checkpoint, a.id AS "attemptId", c.queue, c.trace_context AS "traceContext"
     FROM claimed c, attempt a`,
    [opts.jobId, opts.workerId, opts.leaseMs / 1000, opts.type],
  );
  const row = rows[0];
  if (!row) return null;
  return { ...row, fencingToken: BigInt(row.fencingToken), attemptId: BigInt(row.attemptId) };
}
