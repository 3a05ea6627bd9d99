CREATE OR REPLACE FUNCTION public.conveyor_downstream_release(p_key text, p_holder uuid, p_outcome text, p_retry_after_ms integer, p_failures integer, p_failure_rate double precision, p_min_attempts integer, p_window_ms integer, p_open_ms integer)
 RETURNS text
 LANGUAGE plpgsql
AS $function$
DECLARE
  d downstreams%ROWTYPE;
  v_now timestamptz := clock_timestamp();
  v_busy integer;
  v_opened boolean := false;
  v_closed boolean := false;
BEGIN
  SELECT * INTO d FROM downstreams WHERE key = p_key FOR UPDATE;
  IF NOT FOUND THEN RETURN 'closed'; END IF;
  DELETE FROM downstream_slots WHERE key = p_key AND holder = p_holder;
  IF v_now - d.window_started_at > make_interval(secs => p_window_ms / 1000.0) THEN
    d.window_started_at := v_now; d.window_attempts := 0; d.window_failures := 0;
  END IF;
  IF p_outcome = 'success' THEN
    d.consecutive_failures := 0;
    d.window_attempts := d.window_attempts + 1;
    d.failing_since := NULL;
    d.last_success_at := v_now;
    IF d.circuit <> 'closed' THEN
      d.circuit := 'closed'; d.opened_at := NULL; d.retry_at := NULL; d.probe_holder := NULL;
      v_closed := true;
    END IF;
  ELSIF p_outcome = 'failure' THEN
    d.consecutive_failures := d.consecutive_failures + 1;
    d.window_attempts := d.window_attempts + 1;
    d.window_failures := d.window_failures + 1;
    d.failing_since := coalesce(d.failing_since, v_now);
    d.last_failure_at := v_now;
    IF d.circuit = 'half_open'
       OR (d.circuit = 'closed' AND (d.consecutive_failures >= p_failures
           OR (d.window_attempts >= p_min_attempts AND d.window_failures >= d.window_attempts * p_failure_rate))) THEN
      d.circuit := 'open';
      d.opened_at := CASE WHEN d.opened_at IS NULL OR d.probe_holder IS NULL THEN v_now ELSE d.opened_at END;
      d.retry_at := v_now + make_interval(secs => p_open_ms / 1000.0);
      d.probe_holder := NULL;
      v_opened := true;
    END IF;
  ELSIF d.circuit = 'half_open' AND d.probe_holder = p_holder THEN
    -- A probe that said nothing about health (rate limited): another may probe.
    d.probe_holder := NULL;
  END IF;
  IF p_retry_after_ms > 0 THEN
    d.blocked_until := greatest(coalesce(d.blocked_until, v_now), v_now + make_interval(secs => p_retry_after_ms / 1000.0));
  END IF;
  UPDATE downstreams SET
    circuit = d.circuit, opened_at = d.opened_at, retry_at = d.retry_at, probe_holder = d.probe_holder,
    consecutive_failures = d.consecutive_failures, window_started_at = d.window_started_at,
    window_attempts = d.window_attempts, window_failures = d.window_failures,
    failing_since = d.failing_since, last_success_at = d.last_success_at, last_failure_at = d.last_failure_at,
    blocked_until = d.blocked_until, updated_at = v_now
  WHERE key = p_key;

  IF v_opened THEN
    -- The oldest waiter probes when the circuit half-opens.
    PERFORM conveyor_downstream_wake(p_key, 1, d.retry_at);
  ELSIF d.circuit = 'closed' AND d.blocked_until > v_now THEN
    -- Held by a Retry-After: the oldest waiter goes first when it ends (unless one is named).
    IF d.probe_holder IS NULL THEN
      PERFORM conveyor_downstream_wake(p_key, 1, d.blocked_until);
    END IF;
  ELSIF d.circuit = 'closed' THEN
    SELECT count(*) INTO v_busy FROM downstream_slots WHERE key = p_key;
    PERFORM conveyor_downstream_wake(p_key, greatest(d.concurrency - v_busy, 0),
                                     greatest(now(), coalesce(d.blocked_until, now())));
  END IF;
  RETURN d.circuit;
END $function$;
