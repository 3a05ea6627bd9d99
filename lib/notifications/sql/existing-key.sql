-- The key of member $1's unsubscribe links in tenant $2, if a mail was ever sent them there.
SELECT key FROM notification_keys WHERE user_id = $1::uuid AND tenant_id = $2::uuid
