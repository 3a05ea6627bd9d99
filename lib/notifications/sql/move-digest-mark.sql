-- Tenant $1's digest has covered the dead letters up to $2.
UPDATE notification_digest_marks SET covered_to = $2::timestamptz WHERE tenant_id = $1::uuid
