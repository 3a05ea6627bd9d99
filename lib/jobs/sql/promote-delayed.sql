-- Delayed one-off jobs whose time came: `scheduled` → `queued` (admission takes them from there).
UPDATE jobs SET status = 'queued', updated_at = now()
 WHERE id IN (SELECT id FROM jobs WHERE status = 'scheduled' AND run_at <= now()
               ORDER BY run_at LIMIT 1000 FOR UPDATE SKIP LOCKED)
