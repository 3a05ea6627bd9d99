CREATE OR REPLACE FUNCTION public.conveyor_job_search_truncate()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  TRUNCATE job_search;
  RETURN NULL;
END $function$;
