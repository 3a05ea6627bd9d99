CREATE OR REPLACE FUNCTION public.conveyor_event_emit(p_tenant uuid, p_event text, p_data jsonb, p_job uuid)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
DECLARE
  c record;
BEGIN
  FOR c IN SELECT consume_function FROM event_consumers ORDER BY name LOOP
    EXECUTE format('SELECT %I($1, $2, $3, $4)', c.consume_function) USING p_tenant, p_event, p_data, p_job;
  END LOOP;
END $function$;
