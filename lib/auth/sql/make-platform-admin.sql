-- Makes user $1 a platform admin.
UPDATE users SET is_platform_admin = true WHERE id = $1::uuid
