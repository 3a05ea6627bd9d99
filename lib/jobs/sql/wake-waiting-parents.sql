-- A parent waiting for children that have all ended, that missed the trigger that wakes it (in the
-- last child's transaction): `retrying`, to resume its attempt when admitted again.
UPDATE jobs p SET status = 'retrying', waiting_since = NULL, admitted_at = NULL, run_at = now(),
       resume_pending = true, updated_at = now()
 WHERE p.waiting_since < now() - interval '5 seconds' AND p.status = 'running'
   AND NOT EXISTS (SELECT 1 FROM jobs c WHERE c.parent_id = p.id
                   AND c.status NOT IN ('succeeded', 'failed', 'cancelled', 'expired'))
