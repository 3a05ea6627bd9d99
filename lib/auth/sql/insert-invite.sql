-- An invitation: $1 e-mail, $2 tenant (null: a platform admin's), $3 role, $4 platform admin,
-- $5 the sha256 of its token, $6 days it lasts, $7 who invites (null: the command line).
INSERT INTO invites (id, email, tenant_id, role, platform_admin, token_hash, expires_at, created_by_id)
VALUES (gen_random_uuid(), $1::text, $2::uuid, $3::membership_role, $4::boolean, $5::text,
        now() + make_interval(days => $6::int), $7::uuid)
RETURNING id
