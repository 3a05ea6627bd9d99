-- A running job whose attempt was lost (its lease expired, its worker exited): a new fencing token
-- (the old holder's writes are refused), the error $3, and status $2 (`retrying`: back to wait for
-- admission at its old place in line, run_at kept; `failed` or `cancelled`: it ends).
UPDATE jobs SET status = $2::job_status, fencing_token = fencing_token + 1,
       lease_owner = NULL, lease_expires_at = NULL, resume_pending = false,
       error_class = 'crashed', error_message = $3::text, error_stack = NULL,
       admitted_at = CASE WHEN $2::job_status = 'retrying' THEN NULL ELSE admitted_at END,
       finished_at = CASE WHEN $2::job_status = 'retrying' THEN finished_at ELSE now() END,
       updated_at = now()
 WHERE id = $1::uuid AND status = 'running'
