-- Forgets the streams of key $1 or tenant $2 not seen for $3 seconds: their process died.
DELETE FROM sse_streams WHERE (principal_key = $1 OR tenant_id = $2) AND seen_at < now() - make_interval(secs => $3)
