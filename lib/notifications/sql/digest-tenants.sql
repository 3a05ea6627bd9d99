-- Tenants where an operator wants the dead-letter digest; a tenant seen for the first time starts
-- its mark now (what failed before anyone asked is not news).
WITH subscribed AS (
  SELECT DISTINCT p.tenant_id FROM notification_preferences p
    JOIN memberships m ON m.user_id = p.user_id AND m.tenant_id = p.tenant_id AND m.role = 'operator'
   WHERE p.kind = 'dead_letters' AND p.email
), started AS (
  INSERT INTO notification_digest_marks (tenant_id, covered_to)
  SELECT tenant_id, now() FROM subscribed
  ON CONFLICT (tenant_id) DO NOTHING
)
SELECT tenant_id AS "tenantId!" FROM subscribed
