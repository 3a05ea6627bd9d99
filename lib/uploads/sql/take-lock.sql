-- Takes upload $1's lock for holder $2 ($3 seconds) when it is free or its lease expired; else
-- `leftMs`: how long the holder's lease has left (the subquery reads the row as it was before).
WITH taken AS (
  INSERT INTO upload_locks (upload_id, holder, expires_at) VALUES ($1, $2, now() + make_interval(secs => $3))
  ON CONFLICT (upload_id) DO UPDATE
    SET holder = excluded.holder, expires_at = excluded.expires_at, release_requested_at = NULL
  WHERE upload_locks.expires_at < now()
  RETURNING 1)
SELECT EXISTS (SELECT 1 FROM taken) AS "taken!",
       (SELECT extract(epoch FROM expires_at - now()) * 1000 FROM upload_locks WHERE upload_id = $1)::float8
         AS "leftMs"
