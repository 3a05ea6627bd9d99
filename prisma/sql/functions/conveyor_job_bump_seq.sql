CREATE OR REPLACE FUNCTION public.conveyor_job_bump_seq()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  IF (NEW.status, NEW.progress_done, NEW.progress_total, NEW.progress_stage, NEW.progress_message, NEW.progress_detail::text, NEW.attempts,
      NEW.result::text, NEW.error_message, NEW.cancel_requested_at, NEW.admitted_at IS NULL,
      NEW.children_total, NEW.children_done, NEW.children_failed, NEW.progress_bytes, NEW.children_retries::text)
     IS DISTINCT FROM
     (OLD.status, OLD.progress_done, OLD.progress_total, OLD.progress_stage, OLD.progress_message, OLD.progress_detail::text, OLD.attempts,
      OLD.result::text, OLD.error_message, OLD.cancel_requested_at, OLD.admitted_at IS NULL,
      OLD.children_total, OLD.children_done, OLD.children_failed, OLD.progress_bytes, OLD.children_retries::text) THEN
    NEW.seq := OLD.seq + 1;
  END IF;
  RETURN NEW;
END $function$;
