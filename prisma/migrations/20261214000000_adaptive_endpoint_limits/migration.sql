-- Endpoints isolated (issue 34): an adaptive in-flight limit per downstream.
--
-- A fixed per-endpoint limit either lets a slow endpoint hold many of the
-- webhooks pool's slots for as long as it takes to answer (8 of 16 for 5 s per
-- request: two such endpoints hold the whole pool), or, set low, makes a fast
-- endpoint park behind itself. The limit now adapts to observed latency (AIMD):
-- it starts at 2 in flight; each answer within p_slow_ms adds one, up to the
-- configured limit (p_concurrency); a slower answer, or a call still unanswered
-- after p_slow_ms, halves it (at least 1; once per round trip). A fast endpoint
-- sits at its configured limit; a slow one holds one slot. Callers that pass no
-- p_slow_ms keep the fixed limit.

ALTER TABLE "downstreams" ADD COLUMN "adaptive_limit" DOUBLE PRECISION,
                          ADD COLUMN "limit_cut_at" TIMESTAMPTZ(3);
-- When the call began: the release measures its duration from it.
ALTER TABLE "downstream_slots" ADD COLUMN "acquired_at" TIMESTAMPTZ(3) NOT NULL DEFAULT clock_timestamp();

-- The in-flight limit in force for a downstream: the adaptive one under the configured one, when learnt.
CREATE FUNCTION "conveyor_downstream_limit"(d downstreams) RETURNS integer LANGUAGE sql STABLE AS $$
  SELECT greatest(1, least(d.concurrency, floor(coalesce(d.adaptive_limit, d.concurrency))))::integer
$$;

DROP FUNCTION "conveyor_downstream_acquire"(text, uuid, double precision, double precision, integer, integer);
DROP FUNCTION "conveyor_downstream_release"(text, uuid, text, integer, integer, double precision, integer, integer, integer);

CREATE FUNCTION "conveyor_downstream_acquire"(
  p_key text, p_holder uuid, p_rate double precision, p_burst double precision,
  p_concurrency integer, p_hold_ms integer, p_slow_ms integer DEFAULT NULL
) RETURNS TABLE (granted boolean, wait_ms integer, reason text)
LANGUAGE plpgsql AS $$
DECLARE
  d downstreams%ROWTYPE;
  v_now timestamptz := clock_timestamp();
  v_busy integer;
  v_tokens double precision;
  v_limit double precision;
  v_oldest timestamptz;
BEGIN
  INSERT INTO downstreams (key, tokens, concurrency) VALUES (p_key, p_burst, p_concurrency) ON CONFLICT DO NOTHING;
  SELECT * INTO d FROM downstreams WHERE key = p_key FOR UPDATE;
  -- (Each statement below sees what committed before this lock was granted.)
  -- Slots of holders gone: expired, this holder's own earlier run, or a job no longer running under a
  -- live lease (its worker crashed: the slot is free once the lease runs out, not only at expires_at).
  DELETE FROM downstream_slots s WHERE s.key = p_key
     AND (s.expires_at < v_now OR s.holder = p_holder
          OR NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = s.holder AND j.status = 'running'
                           AND (j.lease_expires_at IS NULL OR j.lease_expires_at > v_now)));
  DELETE FROM downstream_waiters WHERE key = p_key AND holder = p_holder;
  UPDATE downstreams SET concurrency = p_concurrency, updated_at = v_now WHERE key = p_key;

  -- Held back (a Retry-After in force, or the circuit open): one waiting job is named to go
  -- first when the hold ends (a timed wait); the rest park in line, so a held downstream costs
  -- one run per delivery at most, not one per delivery per retry.
  IF d.blocked_until > v_now OR (d.circuit = 'open' AND d.retry_at > v_now) THEN
    IF d.probe_holder IS NULL OR d.probe_holder = p_holder
       OR NOT EXISTS (SELECT 1 FROM jobs WHERE id = d.probe_holder AND status IN ('queued', 'retrying', 'running')) THEN
      UPDATE downstreams SET probe_holder = p_holder WHERE key = p_key;
      RETURN QUERY SELECT false,
        ceil(extract(epoch FROM greatest(coalesce(d.blocked_until, v_now),
                                         CASE WHEN d.circuit = 'open' THEN d.retry_at ELSE v_now END) - v_now) * 1000
             + random() * 50)::integer,
        CASE WHEN d.circuit = 'open' THEN 'circuit_open' ELSE 'retry_after' END;
      RETURN;
    END IF;
    INSERT INTO downstream_waiters (key, holder) VALUES (p_key, p_holder);
    RETURN QUERY SELECT false, NULL::integer, CASE WHEN d.circuit = 'open' THEN 'circuit_open' ELSE 'retry_after' END;
    RETURN;
  ELSIF d.circuit = 'closed' AND d.probe_holder IS NOT NULL THEN
    -- The hold is over; whoever was named to go first no longer needs to be.
    UPDATE downstreams SET probe_holder = NULL WHERE key = p_key;
  ELSIF d.circuit = 'open' THEN
    -- The open period is over: this call is the one probe.
    UPDATE downstreams SET circuit = 'half_open', probe_holder = p_holder WHERE key = p_key;
  ELSIF d.circuit = 'half_open' AND d.probe_holder IS DISTINCT FROM p_holder
        AND EXISTS (SELECT 1 FROM downstream_slots WHERE key = p_key AND holder = d.probe_holder) THEN
    INSERT INTO downstream_waiters (key, holder) VALUES (p_key, p_holder);
    RETURN QUERY SELECT false, NULL::integer, 'circuit_half_open'::text;
    RETURN;
  ELSIF d.circuit = 'half_open' THEN
    -- The probe was lost (its holder crashed): this call probes instead.
    UPDATE downstreams SET probe_holder = p_holder WHERE key = p_key;
  END IF;

  -- The in-flight limit: p_concurrency, or with p_slow_ms the adaptive limit under it (AIMD on
  -- latency): it starts at 2; an answer within p_slow_ms adds one, a slower one halves it
  -- (conveyor_downstream_release), and so does a call still unanswered after p_slow_ms (here):
  -- a downstream that turns slow is cut back before its first slow answer comes in. At most one
  -- halving per round trip: calls begun before the last cut do not cut again.
  v_limit := p_concurrency;
  IF p_slow_ms IS NOT NULL THEN
    v_limit := least(p_concurrency, coalesce(d.adaptive_limit, least(p_concurrency, 2)));
    SELECT min(acquired_at) INTO v_oldest FROM downstream_slots WHERE key = p_key;
    IF v_oldest < v_now - make_interval(secs => p_slow_ms / 1000.0)
       AND (d.limit_cut_at IS NULL OR d.limit_cut_at < v_oldest) THEN
      v_limit := greatest(1, v_limit / 2);
      UPDATE downstreams SET limit_cut_at = v_now WHERE key = p_key;
    END IF;
    IF v_limit IS DISTINCT FROM d.adaptive_limit THEN
      UPDATE downstreams SET adaptive_limit = v_limit WHERE key = p_key;
    END IF;
  END IF;

  SELECT count(*) INTO v_busy FROM downstream_slots WHERE key = p_key;
  IF v_busy >= floor(v_limit) THEN
    INSERT INTO downstream_waiters (key, holder) VALUES (p_key, p_holder);
    RETURN QUERY SELECT false, NULL::integer, 'concurrency'::text;
    RETURN;
  END IF;

  v_tokens := least(p_burst, d.tokens + p_rate * extract(epoch FROM v_now - d.refilled_at));
  IF v_tokens < 1 THEN
    UPDATE downstreams SET tokens = v_tokens, refilled_at = v_now WHERE key = p_key;
    -- Spread over a few refills, so the deferred do not all come back at once.
    RETURN QUERY SELECT false, ceil(((1 - v_tokens) + random() * 4) / p_rate * 1000)::integer, 'rate_limit'::text;
    RETURN;
  END IF;
  UPDATE downstreams SET tokens = v_tokens - 1, refilled_at = v_now WHERE key = p_key;
  INSERT INTO downstream_slots (key, holder, expires_at, acquired_at)
    VALUES (p_key, p_holder, v_now + make_interval(secs => p_hold_ms / 1000.0), v_now);
  RETURN QUERY SELECT true, 0, NULL::text;
END $$;

CREATE FUNCTION "conveyor_downstream_release"(
  p_key text, p_holder uuid, p_outcome text, p_retry_after_ms integer,
  p_failures integer, p_failure_rate double precision, p_min_attempts integer,
  p_window_ms integer, p_open_ms integer, p_slow_ms integer DEFAULT NULL
) RETURNS text
LANGUAGE plpgsql AS $$
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
  -- The adaptive in-flight limit learns from the call's duration (see conveyor_downstream_acquire).
  IF p_slow_ms IS NOT NULL AND v_started IS NOT NULL THEN
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
    SELECT count(*) INTO v_busy FROM downstream_slots WHERE key = p_key;
    PERFORM conveyor_downstream_wake(p_key, greatest(conveyor_downstream_limit(d) - v_busy, 0),
                                     greatest(now(), coalesce(d.blocked_until, now())));
  END IF;
  RETURN d.circuit;
END $$;
