CREATE OR REPLACE FUNCTION public.conveyor_job_search_update()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  UPDATE job_search SET text = NEW.input::text || ' ' || coalesce(NEW.error_message, '')
   WHERE job_id = NEW.id;
  RETURN NULL;
END $function$;
