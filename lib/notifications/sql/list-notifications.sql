-- Member $1's notifications in tenant $2, newest first, after the keyset cursor ($3 its time,
-- $4 its id; null: from the newest), at most $5.
SELECT n.id, n.job_id AS "jobId", n.kind, k.label AS "kindLabel", n.job_type AS "jobType", n.outcome,
       n.error_message AS "errorMessage", n.created_at AS "createdAt", n.read_at AS "readAt"
  FROM notifications n JOIN notification_kinds k ON k.kind = n.kind
 WHERE n.user_id = $1::uuid AND n.tenant_id = $2::uuid
   AND ($3::timestamptz IS NULL OR (n.created_at, n.id) < ($3::timestamptz, $4::uuid))
 ORDER BY n.created_at DESC, n.id DESC
 LIMIT $5::int
