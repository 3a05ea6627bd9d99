-- Digest $1 with what its mail needs: its recipient, its tenant, whether they still want it (their
-- preference now, still an operator), and the dead letters it lists that are still there.
SELECT d.id, d.tenant_id AS "tenantId", d.user_id AS "userId", d.window_from AS "windowFrom",
       d.window_to AS "windowTo", d.total, d.mailed_at AS "mailedAt", u.email, t.name AS "tenantName",
       coalesce(p.email, false) AS "wanted!",
       EXISTS (SELECT 1 FROM memberships m WHERE m.user_id = d.user_id AND m.tenant_id = d.tenant_id
                 AND m.role = 'operator') AS "operator!",
       coalesce((SELECT jsonb_agg(jsonb_build_object('id', j.id, 'type', j.type, 'error', j.error_message,
                                                     'finishedAt', j.finished_at) ORDER BY j.finished_at)
                   FROM jobs j WHERE j.id = ANY (d.job_ids)), '[]'::jsonb) AS "jobs!"
  FROM notification_digests d
  JOIN users u ON u.id = d.user_id
  JOIN tenants t ON t.id = d.tenant_id
  LEFT JOIN notification_preferences p ON p.user_id = d.user_id AND p.tenant_id = d.tenant_id
                                     AND p.kind = 'dead_letters'
 WHERE d.id = $1::uuid
