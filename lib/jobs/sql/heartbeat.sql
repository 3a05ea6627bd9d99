-- Extends the lease of a running attempt by $3 seconds, fenced by its token $2.
-- @prepare
UPDATE jobs SET heartbeat_at = now(), lease_expires_at = now() + make_interval(secs => $3::float8)
 WHERE id = $1 AND fencing_token = $2 AND status = 'running'
 RETURNING cancel_requested_at IS NOT NULL AS "cancelRequested!"
