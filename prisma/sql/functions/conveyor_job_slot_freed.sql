CREATE OR REPLACE FUNCTION public.conveyor_job_slot_freed()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  PERFORM pg_notify('conveyor_admit', NEW.queue);
  RETURN NULL;
END $function$;
