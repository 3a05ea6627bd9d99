CREATE OR REPLACE FUNCTION public.conveyor_job_record_transition()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  IF NEW.status IS DISTINCT FROM OLD.status THEN
    INSERT INTO job_transitions (job_id, from_status, to_status, attempt) VALUES (NEW.id, OLD.status, NEW.status, NEW.attempts);
  END IF;
  RETURN NULL;
END $function$;
