CREATE OR REPLACE FUNCTION public.conveyor_cancel_waiting()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  UPDATE jobs SET status = 'cancelled', waiting_since = NULL, resume_pending = false, finished_at = now(),
                  error_class = 'cancelled', error_message = coalesce(NEW.cancel_reason, 'Cancelled on request'),
                  updated_at = now()
  WHERE id = NEW.id AND status = 'running' AND waiting_since IS NOT NULL;
  UPDATE job_attempts SET outcome = 'cancelled'
  WHERE job_id = NEW.id AND outcome = 'waiting' AND attempt = NEW.attempts;
  RETURN NULL;
END $function$;
