-- Records a failed attempt, fenced by its token (see fail.ts): $1 job, $2 token, $3 what it leads
-- to, $4 delay (ms), $5 error class, $6 message, $7 stack, $8 attempt id, $9 interrupted.
WITH cur AS (
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
SELECT (SELECT status::text FROM next) AS status
