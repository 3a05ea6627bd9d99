-- Frees holder $2's lock on upload $1 and notifies the waiters (channel conveyor_upload_locks,
-- UPLOAD_LOCKS_CHANNEL), in one statement.
WITH freed AS (DELETE FROM upload_locks WHERE upload_id = $1 AND holder = $2 RETURNING upload_id)
SELECT pg_notify('conveyor_upload_locks', upload_id) FROM freed
