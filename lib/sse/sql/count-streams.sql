-- The open streams of the principal key $1 and of tenant $2.
SELECT (SELECT count(*) FROM sse_streams WHERE principal_key = $1)::int AS "user!",
       (SELECT count(*) FROM sse_streams WHERE tenant_id = $2)::int AS "tenant!"
