-- User $1's new password hash $2; sessions older than now are refused.
UPDATE users SET password_hash = $2::text, password_changed_at = now() WHERE id = $1::uuid
