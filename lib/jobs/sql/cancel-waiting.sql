-- Ends the jobs of $1 (null: all) that wait (queued or retrying, not admitted) while carrying a cancel
-- request: a request that raced the end of an attempt. Admission never starts them.
UPDATE jobs SET status = 'cancelled', finished_at = now(), error_class = 'cancelled',
       error_message = coalesce(cancel_reason, 'Cancelled on request'), updated_at = now()
 WHERE ($1::uuid[] IS NULL OR id = ANY($1::uuid[])) AND status IN ('queued', 'retrying') AND cancel_requested_at IS NOT NULL
   AND admitted_at IS NULL
RETURNING id
