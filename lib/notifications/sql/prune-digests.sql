-- Tenant $1's digests made before $2, at most $3 (the workload's history, after the job retention).
-- @client prisma
DELETE FROM notification_digests WHERE id IN (
  SELECT id FROM notification_digests WHERE tenant_id = $1::uuid AND created_at < $2::timestamptz
   LIMIT $3::int FOR UPDATE SKIP LOCKED)
