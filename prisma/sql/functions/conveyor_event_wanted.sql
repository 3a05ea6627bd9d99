CREATE OR REPLACE FUNCTION public.conveyor_event_wanted(p_tenant uuid, p_event text)
 RETURNS boolean
 LANGUAGE plpgsql
AS $function$
DECLARE
  c record;
  v_wanted boolean;
BEGIN
  FOR c IN SELECT wanted_function FROM event_consumers ORDER BY name LOOP
    EXECUTE format('SELECT %I($1, $2)', c.wanted_function) INTO v_wanted USING p_tenant, p_event;
    IF v_wanted THEN
      RETURN true;
    END IF;
  END LOOP;
  RETURN false;
END $function$;
