/**
 * Claims a job for one attempt, in one statement: status `running`, a new
 * fencing token, the lease, and the attempt row. A job woken after its
 * children ended resumes its attempt (same number, `resume` + 1) instead of
 * starting a new one. Only an admitted, unpaused, uncancelled job is claimed,
 * so a stale or duplicate dispatch is harmless: it claims nothing. The
 * attempt row keeps the job's run_at as `ready_at` (start latency).
 */
import { prepared, type SqlClient } from "../../db";

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

export type ClaimRequest = { jobId: string; type: string; workerId: string; leaseMs: number };

/** Claims one job (see claimJobs). */
export async function claimJob(client: SqlClient, opts: ClaimRequest): Promise<ClaimedJob | null> {
  return (await claimJobs(client, [opts]))[0]!;
}

/**
 * Claims several jobs in one statement (the runner's batches): each request's
 * result in its place, null for a job that could not be claimed. A job asked
 * for twice in one batch (a duplicate dispatch) is claimed for its first
 * request only.
 *
 * The status checks compare `status::text`: said as `status IN (…)`, they imply
 * the predicates of the partial indexes over waiting jobs, and a planner
 * without statistics (a new table, autovacuum off) then scans a whole waiting
 * index instead of looking the ids up in the primary key.
 */
export async function claimJobs(client: SqlClient, requests: ClaimRequest[]): Promise<(ClaimedJob | null)[]> {
  const first = new Map<string, number>();
  requests.forEach((r, i) => first.has(r.jobId) || first.set(r.jobId, i));
  const unique = [...first.keys()].map((id) => requests[first.get(id)!]!);
  const { rows } = await client.query<
    Omit<ClaimedJob, "fencingToken" | "attemptId"> & { fencingToken: string; attemptId: string }
  >({
    ...prepared(`WITH req AS (
       SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::float8[]) AS r(id, type, worker_id, lease_secs)
     ), claimed AS (
       UPDATE jobs SET
         status = 'running',
         attempts = attempts + CASE WHEN resume_pending THEN 0 ELSE 1 END,
         resumes = CASE WHEN resume_pending THEN resumes + 1 ELSE 0 END,
         resume_pending = false,
         fencing_token = fencing_token + 1,
         lease_owner = req.worker_id,
         lease_expires_at = now() + make_interval(secs => req.lease_secs),
         heartbeat_at = now(),
         started_at = coalesce(started_at, now()),
         updated_at = now()
       FROM req
       WHERE jobs.id = ANY($1::uuid[]) AND jobs.id = req.id AND jobs.type = req.type
         AND jobs.status::text IN ('queued', 'retrying') AND jobs.cancel_requested_at IS NULL
         AND jobs.run_at <= now() + interval '1 second'
         -- Only an admitted job starts: a stale dispatch (the job was taken back by a
         -- pause or the reaper since) is refused. The row's re-check after a concurrent
         -- update sees admitted_at, which a pause clears in the same transaction.
         AND jobs.admitted_at IS NOT NULL
         -- A pause that came after admission: the dispatch was already fetched.
         AND NOT conveyor_paused(jobs.queue, jobs.type, jobs.tenant_id)
       RETURNING jobs.id, jobs.tenant_id, jobs.type, jobs.input, jobs.attempts, jobs.resumes, jobs.max_attempts,
                 jobs.fencing_token, jobs.created_by_id, jobs.priority, jobs.checkpoint, jobs.run_at, jobs.queue,
                 jobs.trace_context, req.worker_id
     ), attempt AS (
       -- ready_at: when the job became due, for the start latency the health signals report.
       INSERT INTO job_attempts (job_id, attempt, resume, worker_id, fencing_token, started_at, ready_at)
       SELECT id, attempts, resumes, worker_id, fencing_token, now(), run_at FROM claimed
       RETURNING id, job_id
     )
     SELECT c.id, c.tenant_id AS "tenantId", c.type, c.input, c.attempts AS attempt, c.resumes AS resume,
            c.max_attempts AS "maxAttempts", c.fencing_token AS "fencingToken", c.created_by_id AS "createdById",
            c.priority, c.checkpoint, a.id AS "attemptId", c.queue, c.trace_context AS "traceContext"
     FROM claimed c JOIN attempt a ON a.job_id = c.id`),
    values: [
      unique.map((r) => r.jobId),
      unique.map((r) => r.type),
      unique.map((r) => r.workerId),
      unique.map((r) => r.leaseMs / 1000),
    ],
  });
  const byId = new Map(rows.map((row) => [row.id.toLowerCase(), row]));
  return requests.map((r, i) => {
    const row = first.get(r.jobId) === i ? byId.get(r.jobId.toLowerCase()) : undefined;
    return row ? { ...row, fencingToken: BigInt(row.fencingToken), attemptId: BigInt(row.attemptId) } : null;
  });
}
