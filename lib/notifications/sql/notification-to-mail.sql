-- Notification $1 with what its mail needs: its recipient, its tenant, and whether the recipient
-- still wants it (their preference now, and still a member).
SELECT n.id, n.tenant_id AS "tenantId", n.user_id AS "userId", n.job_id AS "jobId", n.kind, k.label,
       n.outcome, n.error_message AS "errorMessage", n.mailed_at AS "mailedAt", u.email, t.name AS "tenantName",
       coalesce(p.email, k.email_default) AS "wanted!",
       EXISTS (SELECT 1 FROM memberships m WHERE m.user_id = n.user_id AND m.tenant_id = n.tenant_id) AS "member!"
  FROM notifications n
  JOIN notification_kinds k ON k.kind = n.kind
  JOIN users u ON u.id = n.user_id
  JOIN tenants t ON t.id = n.tenant_id
  LEFT JOIN notification_preferences p ON p.user_id = n.user_id AND p.tenant_id = n.tenant_id AND p.kind = n.kind
 WHERE n.id = $1::uuid
