-- The one cancel: every job of $1 that is open is asked to stop, for reason $2 by user $3.
-- A waiting one (scheduled, queued, retrying) ends `cancelled` at once, its message the reason or
-- else $4; a running one keeps running with the request (its worker hears of it and aborts the
-- attempt), unless it already carries one. `was`: the status it had.
WITH j AS (
  SELECT id, status FROM jobs
   WHERE id = ANY($1::uuid[])
     AND (status IN ('scheduled', 'queued', 'retrying') OR (status = 'running' AND cancel_requested_at IS NULL))
   ORDER BY id
   FOR UPDATE
)
UPDATE jobs SET cancel_requested_at = now(), cancel_requested_by_id = $3::uuid, cancel_reason = $2::text,
       updated_at = now(),
       status = CASE WHEN j.status = 'running' THEN jobs.status ELSE 'cancelled'::job_status END,
       finished_at = CASE WHEN j.status = 'running' THEN jobs.finished_at ELSE now() END,
       error_class = CASE WHEN j.status = 'running' THEN jobs.error_class ELSE 'cancelled' END,
       error_message = CASE WHEN j.status = 'running' THEN jobs.error_message ELSE coalesce($2::text, $4::text) END
  FROM j WHERE jobs.id = j.id
RETURNING jobs.id, j.status::text AS "was!"
