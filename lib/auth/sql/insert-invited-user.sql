-- A new account ($1 e-mail, $2 name, $3 password hash); none when the e-mail has one already.
INSERT INTO users (id, email, name, password_hash, is_platform_admin)
VALUES (gen_random_uuid(), $1::text, $2::text, $3::text, false)
ON CONFLICT (email) DO NOTHING
RETURNING id
