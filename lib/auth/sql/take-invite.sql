-- Marks the invitation $1 used, once: the first transaction to mark it wins.
UPDATE invites SET accepted_at = now()
 WHERE id = $1::uuid AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > now()
