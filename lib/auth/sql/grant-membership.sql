-- User $1 joins tenant $2 as $3 (or takes that role there).
INSERT INTO memberships (user_id, tenant_id, role) VALUES ($1::uuid, $2::uuid, $3::membership_role)
ON CONFLICT (user_id, tenant_id) DO UPDATE SET role = EXCLUDED.role
