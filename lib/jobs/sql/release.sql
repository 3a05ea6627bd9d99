-- The claim's backstop, for a dispatch that claimed nothing ($1): a waiting job whose cancel
-- request found no attempt to stop ends `cancelled`; one whose scope was paused after its
-- admission gives its slot back (its place in line is kept) and waits until the pause is lifted.
UPDATE jobs SET
   status = CASE WHEN cancel_requested_at IS NOT NULL THEN 'cancelled'::job_status ELSE status END,
   finished_at = CASE WHEN cancel_requested_at IS NOT NULL THEN now() ELSE finished_at END,
   error_class = CASE WHEN cancel_requested_at IS NOT NULL THEN 'cancelled' ELSE error_class END,
   error_message = CASE WHEN cancel_requested_at IS NOT NULL
                        THEN coalesce(cancel_reason, 'Cancelled on request') ELSE error_message END,
   admitted_at = NULL,
   updated_at = now()
 WHERE id = $1 AND status IN ('queued', 'retrying') AND admitted_at IS NOT NULL
   AND (cancel_requested_at IS NOT NULL OR conveyor_paused(queue, type, tenant_id))
