CREATE OR REPLACE FUNCTION public.conveyor_downstream_release(p_key text, p_holder uuid, p_outcome text, p_retry_after_ms integer, p_failures integer, p_failure_rate double precision, p_min_attempts integer, p_window_ms integer, p_open_ms integer, p_slow_ms integer DEFAULT NULL::integer)
 RETURNS text
 LANGUAGE plpgsql
AS $function$
DECLARE
  d downstreams%ROWTYPE;
  v_now timestamptz := clock_timestamp();
  v_busy integer;
  v_opened boolean := false;
  v_closed boolean := false;
  v_started timestamptz;
BEGIN
  SELECT * INTO d FROM downstreams WHERE key = p_key FOR UPDATE;
  IF NOT FOUND THEN RETURN 'closed'; END IF;
  DELETE FROM downstream_slots WHERE key = p_key AND holder = p_holder RETURNING acquired_at INTO v_started;
  -- The adaptive in-flight limit learns from the call's duration (see conveyor_downstream_acquire),
  -- when the call was its attempt's: one taken back (its lease ran out) has no slot left
  -- (conveyor_downstream_drop_holder), or, not reaped yet, no live lease; its duration is the worker's
  -- stall, not the downstream's latency.
  IF p_slow_ms IS NOT NULL AND v_started IS NOT NULL
     AND EXISTS (SELECT 1 FROM jobs j WHERE j.id = p_holder AND j.status = 'running'
                   AND (j.lease_expires_at IS NULL OR j.lease_expires_at > v_now)) THEN
    d.adaptive_limit := coalesce(d.adaptive_limit, least(d.concurrency, 2));
    IF v_now - v_started <= make_interval(secs => p_slow_ms / 1000.0) THEN
      d.adaptive_limit := least(d.concurrency, d.adaptive_limit + 1);
    ELSIF d.limit_cut_at IS NULL OR d.limit_cut_at < v_started THEN
      d.adaptive_limit := greatest(1, d.adaptive_limit / 2);
      d.limit_cut_at := v_now;
    END IF;
  END IF;
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
    blocked_until = d.blocked_until, adaptive_limit = d.adaptive_limit, limit_cut_at = d.limit_cut_at,
    updated_at = v_now
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
    v_busy := conveyor_downstream_busy(p_key);
    PERFORM conveyor_downstream_wake(p_key, greatest(conveyor_downstream_limit(d) - v_busy, 0),
                                     greatest(now(), coalesce(d.blocked_until, now())));
  END IF;
  RETURN d.circuit;
END $function$
;
