-- Records successful attempts, fenced by their tokens (see succeed.ts): $1 ids, $2 tokens,
-- $3 results, $4 attempt ids. Returns the ids whose fence held.
-- `status::text`: see claim.sql (the primary key, whatever the statistics).
-- @prepare
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
SELECT req.id::text AS id FROM req WHERE req.id IN (SELECT id FROM done)
