-- One digest per operator of tenant $1 who wants it, for the window ($2, $3] with $4 dead letters
-- ($5 the listed ids), each with its mail job.
WITH operators AS (
  SELECT p.user_id, conveyor_uuid_v7() AS id FROM notification_preferences p
    JOIN memberships m ON m.user_id = p.user_id AND m.tenant_id = p.tenant_id AND m.role = 'operator'
   WHERE p.tenant_id = $1::uuid AND p.kind = 'dead_letters' AND p.email
)
INSERT INTO notification_digests (id, tenant_id, user_id, window_from, window_to, total, job_ids, mail_job_id)
SELECT id, $1::uuid, user_id, $2::timestamptz, $3::timestamptz, $4::int, $5::uuid[],
       conveyor_notify_mail($1::uuid, jsonb_build_object('digestId', id))
  FROM operators
