-- Member $1's choice in tenant $2: e-mail for kind $3 on or off ($4).
INSERT INTO notification_preferences (user_id, tenant_id, kind, email, updated_at)
VALUES ($1::uuid, $2::uuid, $3::text, $4::boolean, now())
ON CONFLICT (user_id, tenant_id, kind) DO UPDATE SET email = EXCLUDED.email, updated_at = now()
