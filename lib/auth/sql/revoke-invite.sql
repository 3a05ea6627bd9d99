-- Revokes the invitation $1 unless it was accepted or revoked already.
UPDATE invites SET revoked_at = now() WHERE id = $1::uuid AND accepted_at IS NULL AND revoked_at IS NULL
