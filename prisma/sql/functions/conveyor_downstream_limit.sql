CREATE OR REPLACE FUNCTION public.conveyor_downstream_limit(d downstreams)
 RETURNS integer
 LANGUAGE sql
 STABLE
AS $function$
  SELECT greatest(1, least(d.concurrency, floor(coalesce(d.adaptive_limit, d.concurrency))))::integer
$function$;
