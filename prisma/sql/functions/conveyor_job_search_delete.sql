CREATE OR REPLACE FUNCTION public.conveyor_job_search_delete()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  DELETE FROM job_search s USING old_jobs o WHERE s.job_id = o.id;
  RETURN NULL;
END $function$;
