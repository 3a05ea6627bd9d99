-- The key that signs member $1's unsubscribe links in tenant $2, made ($3) with their first mail.
WITH made AS (
  INSERT INTO notification_keys (user_id, tenant_id, key) VALUES ($1::uuid, $2::uuid, $3::text)
  ON CONFLICT (user_id, tenant_id) DO NOTHING
  RETURNING key
)
SELECT key AS "key!" FROM made
UNION ALL
SELECT key FROM notification_keys WHERE user_id = $1::uuid AND tenant_id = $2::uuid
LIMIT 1
