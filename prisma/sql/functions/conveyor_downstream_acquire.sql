CREATE OR REPLACE FUNCTION public.conveyor_downstream_acquire(p_key text, p_holder uuid, p_rate double precision, p_burst double precision, p_concurrency integer, p_hold_ms integer, p_slow_ms integer DEFAULT NULL::integer)
 RETURNS TABLE(granted boolean, wait_ms integer, reason text)
 LANGUAGE plpgsql
AS $function$
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
  -- An unanswered call is evidence only once its attempt has shown itself alive since it went
  -- slow: its job heartbeat came after acquired_at + p_slow_ms, and its worker is not known dead
  -- or exited. A SIGKILLed worker's call never answers either, but it says nothing about the
  -- downstream; it keeps its slot until its attempt is taken back (conveyor_downstream_drop_holder),
  -- and must not halve the limit meanwhile. (A live attempt heartbeats every third of its lease,
  -- so a slow downstream is still cut before its first slow answer: within p_slow_ms + lease/3.)
  v_limit := p_concurrency;
  IF p_slow_ms IS NOT NULL THEN
    v_limit := least(p_concurrency, coalesce(d.adaptive_limit, least(p_concurrency, 2)));
    SELECT min(s.acquired_at) INTO v_oldest
      FROM downstream_slots s JOIN jobs j ON j.id = s.holder
     WHERE s.key = p_key AND j.status = 'running'
       AND j.heartbeat_at >= s.acquired_at + make_interval(secs => p_slow_ms / 1000.0)
       AND NOT EXISTS (SELECT 1 FROM workers w WHERE w.id = j.lease_owner
                         AND (w.state = 'dead' OR w.exited_at IS NOT NULL));
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
END $function$
;
