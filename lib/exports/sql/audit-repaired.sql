-- Records that repair $3 repaired export $2 of tenant $1 ($4: the details), as the one who asked for the repair.
INSERT INTO audit_logs (tenant_id, actor_user_id, action, target_type, target_ids, details)
SELECT $1, created_by_id, 'export.repaired', 'job', ARRAY[$2, $3]::text[], $4::jsonb FROM jobs WHERE id = $3::uuid
