-- Records failed attempts in one statement, each fenced by its token (see fail.ts): $1 jobs,
-- $2 tokens, $3 what each leads to, $4 delays (ms), $5 error classes, $6 messages, $7 stacks,
-- $8 attempt ids, $9 interrupted. Returns each job's new status (null: its fence did not hold).
-- `status::text`: see claim.sql (the primary key, whatever the statistics).
WITH req AS (
  SELECT * FROM unnest($1::uuid[], $2::bigint[], $3::text[], $4::float8[], $5::text[], $6::text[], $7::text[],
                       $8::bigint[], $9::boolean[])
    AS r(id, token, next, delay_ms, error_class, message, stack, attempt_id, interrupted)
), cur AS (
  SELECT j.id, j.cancel_requested_at IS NOT NULL AND req.error_class <> 'cancelled' AS overruled,
         CASE WHEN j.cancel_requested_at IS NOT NULL THEN 'cancelled' ELSE req.next END AS next,
         j.cancel_reason
  FROM jobs j JOIN req ON req.id = j.id
  WHERE j.id = ANY($1::uuid[]) AND j.fencing_token = req.token AND j.status::text = 'running'
  ORDER BY j.id
  FOR UPDATE OF j
), next AS (
  UPDATE jobs j SET
    status = cur.next::job_status,
    max_attempts = j.max_attempts + CASE WHEN req.interrupted THEN 1 ELSE 0 END,
    error_class = CASE WHEN cur.overruled THEN 'cancelled' ELSE req.error_class END,
    error_message = CASE WHEN cur.overruled THEN coalesce(cur.cancel_reason, 'Cancelled on request') ELSE req.message END,
    error_stack = CASE WHEN cur.overruled THEN NULL ELSE req.stack END,
    lease_owner = NULL, lease_expires_at = NULL, resume_pending = false,
    admitted_at = CASE WHEN cur.next = 'retrying' THEN NULL ELSE j.admitted_at END,
    run_at = CASE WHEN cur.next = 'retrying' AND req.delay_ms > 0
                  THEN now() + make_interval(secs => req.delay_ms / 1000) ELSE j.run_at END,
    finished_at = CASE WHEN cur.next = 'retrying' THEN j.finished_at ELSE now() END,
    updated_at = now()
  FROM cur JOIN req ON req.id = cur.id
  WHERE j.id = cur.id
  RETURNING j.id, j.status
), attempt AS (
  UPDATE job_attempts a SET
    outcome = CASE WHEN n.id IS NULL THEN 'lost'
                   WHEN req.interrupted THEN 'interrupted'
                   WHEN n.status = 'cancelled' THEN 'cancelled'
                   ELSE 'failed' END,
    finished_at = now(), duration_ms = (extract(epoch FROM now() - a.started_at) * 1000)::int,
    error_class = CASE WHEN coalesce(c.overruled, false) THEN 'cancelled' ELSE req.error_class END,
    error_message = CASE WHEN coalesce(c.overruled, false)
                         THEN coalesce(c.cancel_reason, 'Cancelled on request') ELSE req.message END,
    error_stack = CASE WHEN coalesce(c.overruled, false) THEN NULL ELSE req.stack END
  FROM req LEFT JOIN cur c ON c.id = req.id LEFT JOIN next n ON n.id = req.id
  WHERE a.id = ANY($8::bigint[]) AND a.id = req.attempt_id
    AND a.outcome = 'running' -- the reaper's verdict on a lost attempt stands
)
SELECT req.id::text AS "id!", n.status::text AS status FROM req LEFT JOIN next n ON n.id = req.id
