CREATE OR REPLACE FUNCTION public.conveyor_downstream_wake(p_key text, p_max integer, p_at timestamp with time zone)
 RETURNS integer
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_n integer := 0;
  v_queue text;
BEGIN
  IF p_max <= 0 THEN RETURN 0; END IF;
  DELETE FROM downstream_waiters w WHERE w.key = p_key
    AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = w.holder AND j.status IN ('queued', 'retrying', 'running'));
  FOR v_queue IN
    WITH picked AS (
      SELECT w.holder FROM downstream_waiters w JOIN jobs j ON j.id = w.holder
       WHERE w.key = p_key AND j.status IN ('queued', 'retrying') AND j.admitted_at IS NULL
       ORDER BY w.since LIMIT p_max
    ), gone AS (
      DELETE FROM downstream_waiters w USING picked WHERE w.key = p_key AND w.holder = picked.holder
    )
    UPDATE jobs j SET run_at = p_at, updated_at = now()
      FROM picked WHERE j.id = picked.holder AND j.status IN ('queued', 'retrying') AND j.admitted_at IS NULL
    RETURNING j.queue
  LOOP
    v_n := v_n + 1;
    IF p_at <= now() THEN PERFORM pg_notify('conveyor_admit', v_queue); END IF;
  END LOOP;
  RETURN v_n;
END $function$;
