-- Extends the leases of running attempts in one statement (the process's lease keeper,
-- lib/jobs/lease-keeper.ts): $1 job ids, $2 their tokens, $3 lease seconds. Each row is fenced by
-- its token; a job missing from the answer has another attempt (its lease was lost).
-- `status::text`: see claim.sql (the primary key, whatever the statistics).
-- @prepare
WITH req AS (
  SELECT * FROM unnest($1::uuid[], $2::bigint[], $3::float8[]) AS r(id, token, lease_secs)
)
UPDATE jobs SET heartbeat_at = now(), lease_expires_at = now() + make_interval(secs => req.lease_secs)
  FROM req
 WHERE jobs.id = ANY($1::uuid[]) AND jobs.id = req.id AND jobs.fencing_token = req.token
   AND jobs.status::text = 'running'
RETURNING jobs.id::text AS "id!", jobs.cancel_requested_at IS NOT NULL AS "cancelRequested!"
