-- Revokes the pending invitations user $1 sent to tenant $2.
UPDATE invites SET revoked_at = now()
 WHERE created_by_id = $1::uuid AND tenant_id = $2::uuid AND accepted_at IS NULL AND revoked_at IS NULL
