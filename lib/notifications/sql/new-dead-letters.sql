-- Tenant $1's top-level jobs that failed (dead letters, not discarded) in ($2, $3]: how many, and
-- the ids of the first $4.
SELECT count(*)::int AS "total!",
       coalesce((array_agg(id ORDER BY finished_at, id))[1:$4::int], '{}') AS "ids!"
  FROM jobs
 WHERE tenant_id = $1::uuid AND parent_id IS NULL AND finished_at > $2::timestamptz
   AND finished_at <= $3::timestamptz AND status = 'failed' AND discarded_at IS NULL
