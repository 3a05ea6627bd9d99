-- A user's live API tokens (neither revoked nor expired), in every tenant.
SELECT count(*)::int AS "n!" FROM api_tokens
 WHERE user_id = $1::uuid AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())
