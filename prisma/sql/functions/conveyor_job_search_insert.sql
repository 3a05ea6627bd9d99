CREATE OR REPLACE FUNCTION public.conveyor_job_search_insert()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  INSERT INTO job_search (job_id, text)
  SELECT id, input::text || ' ' || coalesce(error_message, '') FROM new_jobs;
  RETURN NULL;
END $function$;
