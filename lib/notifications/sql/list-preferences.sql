-- Member $1's e-mail choice in tenant $2 for each kind offered to them (operators' kinds too when
-- $3): their own, or the kind's default.
SELECT k.kind, k.label, k.audience, coalesce(p.email, k.email_default) AS "email!"
  FROM notification_kinds k
  LEFT JOIN notification_preferences p ON p.user_id = $1::uuid AND p.tenant_id = $2::uuid AND p.kind = k.kind
 WHERE k.audience = 'members' OR $3::boolean
 ORDER BY k.audience, k.kind
