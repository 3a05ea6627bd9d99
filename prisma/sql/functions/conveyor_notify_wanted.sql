CREATE OR REPLACE FUNCTION public.conveyor_notify_wanted(p_tenant uuid, p_event text)
 RETURNS boolean
 LANGUAGE sql
 IMMUTABLE
AS $function$
  SELECT p_event IN ('job.succeeded', 'job.failed', 'job.cancelled')
$function$;
