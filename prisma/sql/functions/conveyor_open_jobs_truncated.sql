CREATE OR REPLACE FUNCTION public.conveyor_open_jobs_truncated()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  DELETE FROM open_job_counts;
  RETURN NULL;
END $function$;
