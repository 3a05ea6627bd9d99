CREATE OR REPLACE FUNCTION public.conveyor_downstream_drop_holder(p_holder uuid)
 RETURNS integer
 LANGUAGE plpgsql
AS $function$
DECLARE
  d downstreams%ROWTYPE;
  v_key text;
  v_n integer := 0;
BEGIN
  -- p_holder's attempt was taken back (the reaper: its lease ran out, or its worker exited): the
  -- slots it held are free now, and its calls were never answered, so they teach the adaptive
  -- limit and the breaker nothing (a killed worker says nothing about the downstream). The room
  -- goes to parked callers at once, as a release would give it, instead of waiting for the sweep.
  FOR v_key IN SELECT key FROM downstream_slots WHERE holder = p_holder ORDER BY key LOOP
    SELECT * INTO d FROM downstreams WHERE key = v_key FOR UPDATE;
    DELETE FROM downstream_slots WHERE key = v_key AND holder = p_holder;
    v_n := v_n + 1;
    IF d.circuit = 'closed' AND coalesce(d.blocked_until, now()) <= now() THEN
      PERFORM conveyor_downstream_wake(v_key, greatest(conveyor_downstream_limit(d) - conveyor_downstream_busy(v_key), 0),
                                       now());
    ELSIF d.circuit = 'half_open' AND d.probe_holder = p_holder THEN
      -- It was the probe: the oldest waiter probes instead.
      PERFORM conveyor_downstream_wake(v_key, 1, now());
    END IF;
  END LOOP;
  RETURN v_n;
END $function$;
