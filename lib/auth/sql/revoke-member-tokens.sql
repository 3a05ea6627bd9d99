-- Revokes user $1's live API tokens for tenant $2.
UPDATE api_tokens SET revoked_at = now()
 WHERE user_id = $1::uuid AND tenant_id = $2::uuid AND revoked_at IS NULL
