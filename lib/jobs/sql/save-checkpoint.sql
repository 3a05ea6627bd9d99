-- Saves a running attempt's checkpoint $3, fenced by its token $2.
UPDATE jobs SET checkpoint = $3::jsonb, updated_at = now()
 WHERE id = $1 AND fencing_token = $2 AND status = 'running'
