-- Claims the jobs of a batch for one attempt each, in one statement (see claim.ts): $1 ids,
-- $2 types, $3 worker ids, $4 lease seconds.
-- @prepare
WITH req AS (
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
FROM claimed c JOIN attempt a ON a.job_id = c.id
