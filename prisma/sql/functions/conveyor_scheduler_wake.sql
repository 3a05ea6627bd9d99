CREATE OR REPLACE FUNCTION public.conveyor_scheduler_wake()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  PERFORM pg_notify('conveyor_schedules', '');
  RETURN NULL;
END $function$;
