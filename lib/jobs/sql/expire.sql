-- Succeeded jobs of $1 whose output is gone: `expired`.
UPDATE jobs SET status = 'expired', updated_at = now()
 WHERE id = ANY($1::uuid[]) AND status = 'succeeded'
RETURNING id
