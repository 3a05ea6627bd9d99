-- Renews holder $2's lease on upload $1 for $3 seconds; `asked`: another request wants it.
UPDATE upload_locks SET expires_at = now() + make_interval(secs => $3)
 WHERE upload_id = $1 AND holder = $2 RETURNING release_requested_at IS NOT NULL AS "asked!"
