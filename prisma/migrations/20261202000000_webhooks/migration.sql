-- Outbound webhooks, and the generic downstream guard they use.
--
-- Downstream guard (lib/downstream): per key (any downstream a task calls: a
-- webhook endpoint, an API), a token bucket, a concurrency limit, Retry-After,
-- and a circuit breaker, all in Postgres so they hold across every worker
-- process. A task's attempt asks for a permit (conveyor_downstream_acquire); a
-- refusal defers the job without spending an attempt: until a time (rate limit,
-- Retry-After, the circuit's half-open time) or, when the downstream is busy or
-- its circuit open, parked until a finished call wakes it.
--
-- Webhooks (lib/webhooks): endpoints per tenant; a message per event, recorded
-- in the transaction of the event; one delivery per (message, endpoint), run by
-- a job of type webhook_delivery on the `webhooks` queue; every HTTP attempt kept.

CREATE TABLE "downstreams" (
    "key" TEXT NOT NULL,
    -- The limits the latest caller asked for (the sweep wakes waiters with them).
    "concurrency" INTEGER NOT NULL DEFAULT 1,
    "tokens" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "refilled_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    -- A Retry-After in force: nobody calls before then.
    "blocked_until" TIMESTAMPTZ(3),
    "circuit" TEXT NOT NULL DEFAULT 'closed',
    "opened_at" TIMESTAMPTZ(3),
    -- open: half-open (one probe) from then.
    "retry_at" TIMESTAMPTZ(3),
    -- open: the waiting job that will probe at retry_at; half_open: the probing job.
    "probe_holder" UUID,
    "consecutive_failures" INTEGER NOT NULL DEFAULT 0,
    "window_started_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "window_attempts" INTEGER NOT NULL DEFAULT 0,
    "window_failures" INTEGER NOT NULL DEFAULT 0,
    -- The first failure since the last success (NULL: healthy).
    "failing_since" TIMESTAMPTZ(3),
    "last_success_at" TIMESTAMPTZ(3),
    "last_failure_at" TIMESTAMPTZ(3),
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "downstreams_pkey" PRIMARY KEY ("key"),
    CONSTRAINT "downstreams_circuit_check" CHECK ("circuit" IN ('closed', 'open', 'half_open'))
);

-- Calls in flight; a holder that crashed frees its slot when it expires.
CREATE TABLE "downstream_slots" (
    "key" TEXT NOT NULL,
    "holder" UUID NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    CONSTRAINT "downstream_slots_pkey" PRIMARY KEY ("key", "holder")
);

-- Parked jobs, woken in order as slots free or the circuit closes.
CREATE TABLE "downstream_waiters" (
    "key" TEXT NOT NULL,
    "holder" UUID NOT NULL,
    "since" TIMESTAMPTZ(3) NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT "downstream_waiters_pkey" PRIMARY KEY ("key", "holder")
);
CREATE INDEX "downstream_waiters_key_since_idx" ON "downstream_waiters"("key", "since");

-- Wakes up to p_max parked jobs of a key at p_at (now: and tells the admitters).
-- Jobs still running (between their refusal and recording it) are skipped: the
-- sweep wakes them once parked. Waiters whose job has ended are dropped.
CREATE FUNCTION "conveyor_downstream_wake"(p_key text, p_max integer, p_at timestamptz) RETURNS integer
LANGUAGE plpgsql AS $$
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
END $$;

-- Asks for a permit to call downstream p_key. Granted: a slot is held until
-- released (or p_hold_ms passes). Refused: wait_ms says when to ask again, or
-- NULL when the caller is parked (woken by conveyor_downstream_wake).
CREATE FUNCTION "conveyor_downstream_acquire"(
  p_key text, p_holder uuid, p_rate double precision, p_burst double precision,
  p_concurrency integer, p_hold_ms integer
) RETURNS TABLE (granted boolean, wait_ms integer, reason text)
LANGUAGE plpgsql AS $$
DECLARE
  d downstreams%ROWTYPE;
  v_now timestamptz := clock_timestamp();
  v_busy integer;
  v_tokens double precision;
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

  SELECT count(*) INTO v_busy FROM downstream_slots WHERE key = p_key;
  IF v_busy >= p_concurrency THEN
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
  INSERT INTO downstream_slots (key, holder, expires_at)
    VALUES (p_key, p_holder, v_now + make_interval(secs => p_hold_ms / 1000.0));
  RETURN QUERY SELECT true, 0, NULL::text;
END $$;

-- Gives a permit back with the call's outcome ('success', 'failure' or
-- 'neutral'), feeds the breaker, records a Retry-After, and wakes waiters.
-- Returns the circuit's state afterwards.
CREATE FUNCTION "conveyor_downstream_release"(
  p_key text, p_holder uuid, p_outcome text, p_retry_after_ms integer,
  p_failures integer, p_failure_rate double precision, p_min_attempts integer,
  p_window_ms integer, p_open_ms integer
) RETURNS text
LANGUAGE plpgsql AS $$
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
END $$;

-- A time-ordered UUID (version 7), as the application makes (uuid v7): job ids sort by creation,
-- which the dead-letter view's keyset relies on. (Postgres 18 has uuidv7(); 15 does not.)
CREATE FUNCTION "conveyor_uuid_v7"() RETURNS uuid LANGUAGE sql VOLATILE AS $$
  SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
           PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
           FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid
$$;

-- Endpoints: where a tenant's systems want to be told.
CREATE TABLE "webhook_endpoints" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "url" TEXT NOT NULL,
    "description" TEXT NOT NULL DEFAULT '',
    "events" TEXT[] NOT NULL,
    "secret" TEXT NOT NULL,
    -- After a rotation the old secret signs too, until this time.
    "previous_secret" TEXT,
    "previous_secret_expires_at" TIMESTAMPTZ(3),
    "rate_limit_per_second" INTEGER NOT NULL DEFAULT 10,
    "disabled_at" TIMESTAMPTZ(3),
    "disabled_reason" TEXT,
    "created_by_id" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "webhook_endpoints_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "webhook_endpoints_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE,
    CONSTRAINT "webhook_endpoints_created_by_id_fkey" FOREIGN KEY ("created_by_id") REFERENCES "users"("id") ON DELETE SET NULL
);
CREATE INDEX "webhook_endpoints_tenant_idx" ON "webhook_endpoints"("tenant_id", "created_at");

-- One per event; its id is the `webhook-id` every delivery and retry carries.
CREATE TABLE "webhook_messages" (
    "id" TEXT NOT NULL,
    "tenant_id" UUID NOT NULL,
    "event_type" TEXT NOT NULL,
    -- Exactly the bytes sent (and signed).
    "body" TEXT NOT NULL,
    "job_id" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "webhook_messages_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "webhook_messages_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE
);
CREATE INDEX "webhook_messages_tenant_idx" ON "webhook_messages"("tenant_id", "created_at");

-- One per (message, endpoint). Its state is its current job's (job_id; a replay moves it).
CREATE TABLE "webhook_deliveries" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "message_id" TEXT NOT NULL,
    "endpoint_id" UUID NOT NULL,
    "job_id" UUID NOT NULL,
    -- HTTP requests sent, and how many of them before the latest replay (the retry schedule restarts).
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "round_start" INTEGER NOT NULL DEFAULT 0,
    "last_status_code" INTEGER,
    "last_error" TEXT,
    "last_attempt_at" TIMESTAMPTZ(3),
    "delivered_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "webhook_deliveries_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "webhook_deliveries_message_endpoint_key" UNIQUE ("message_id", "endpoint_id"),
    CONSTRAINT "webhook_deliveries_message_id_fkey" FOREIGN KEY ("message_id") REFERENCES "webhook_messages"("id") ON DELETE CASCADE,
    CONSTRAINT "webhook_deliveries_endpoint_id_fkey" FOREIGN KEY ("endpoint_id") REFERENCES "webhook_endpoints"("id") ON DELETE CASCADE
);
CREATE INDEX "webhook_deliveries_endpoint_idx" ON "webhook_deliveries"("endpoint_id", "created_at", "id");
CREATE INDEX "webhook_deliveries_job_idx" ON "webhook_deliveries"("job_id");

-- Every HTTP request sent: when, what came back, how long it took.
CREATE TABLE "webhook_attempts" (
    "id" BIGSERIAL NOT NULL,
    "delivery_id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "job_id" UUID,
    "url" TEXT NOT NULL,
    "request_headers" JSONB NOT NULL,
    "started_at" TIMESTAMPTZ(3) NOT NULL,
    "duration_ms" INTEGER NOT NULL,
    "status_code" INTEGER,
    "response_headers" JSONB,
    -- The first 4 KiB.
    "response_body" TEXT,
    "error" TEXT,
    "outcome" TEXT NOT NULL,
    CONSTRAINT "webhook_attempts_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "webhook_attempts_delivery_id_fkey" FOREIGN KEY ("delivery_id") REFERENCES "webhook_deliveries"("id") ON DELETE CASCADE
);
CREATE INDEX "webhook_attempts_delivery_idx" ON "webhook_attempts"("delivery_id", "id");

-- Records an event for the tenant's endpoints that want it: a message, and per
-- endpoint a delivery and its job, in the caller's transaction. Returns the
-- message id (NULL when no endpoint wants the event). p_endpoint: only that one (a test).
CREATE FUNCTION "conveyor_webhook_emit"(p_tenant uuid, p_event text, p_data jsonb, p_job uuid, p_endpoint uuid DEFAULT NULL)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  v_id text;
  v_at timestamptz := clock_timestamp();
BEGIN
  IF NOT EXISTS (SELECT 1 FROM webhook_endpoints
                  WHERE tenant_id = p_tenant AND disabled_at IS NULL
                    AND (p_endpoint IS NULL AND p_event = ANY (events) OR id = p_endpoint)) THEN
    RETURN NULL;
  END IF;
  v_id := 'msg_' || replace(gen_random_uuid()::text, '-', '');
  INSERT INTO webhook_messages (id, tenant_id, event_type, body, job_id, created_at)
  VALUES (v_id, p_tenant, p_event,
          jsonb_build_object('type', p_event,
                             'timestamp', to_char(v_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                             'data', p_data)::text,
          p_job, v_at);
  PERFORM conveyor_webhook_deliver(v_id, e.id)
    FROM webhook_endpoints e
   WHERE e.tenant_id = p_tenant AND e.disabled_at IS NULL
     AND (p_endpoint IS NULL AND p_event = ANY (e.events) OR e.id = p_endpoint);
  RETURN v_id;
END $$;

-- A delivery job for (message, endpoint): new, or (a replay) a fresh job for
-- the existing delivery, keeping its webhook-id. If the endpoint already has
-- parked deliveries, the new one parks behind them instead of jumping the line.
-- Returns the job's id; NULL when its delivery is still under way.
CREATE FUNCTION "conveyor_webhook_deliver"(p_message text, p_endpoint uuid, p_created_by uuid DEFAULT NULL)
RETURNS uuid LANGUAGE plpgsql AS $$
DECLARE
  v_job uuid := conveyor_uuid_v7();
  v_delivery uuid;
  v_tenant uuid;
  v_old uuid;
  v_parked boolean;
  v_input jsonb;
BEGIN
  SELECT tenant_id INTO v_tenant FROM webhook_endpoints WHERE id = p_endpoint;
  SELECT id, job_id INTO v_delivery, v_old FROM webhook_deliveries
   WHERE message_id = p_message AND endpoint_id = p_endpoint FOR UPDATE;
  IF v_delivery IS NOT NULL AND EXISTS (SELECT 1 FROM jobs WHERE id = v_old
       AND status IN ('scheduled', 'queued', 'running', 'retrying')) THEN
    RETURN NULL;
  END IF;
  IF v_delivery IS NULL THEN
    v_delivery := conveyor_uuid_v7();
    INSERT INTO webhook_deliveries (id, tenant_id, message_id, endpoint_id, job_id)
    VALUES (v_delivery, v_tenant, p_message, p_endpoint, v_job);
  ELSE
    UPDATE webhook_deliveries SET job_id = v_job, round_start = attempts WHERE id = v_delivery;
  END IF;
  -- Parks behind a line, or while the endpoint's circuit is open: no run is spent finding that out.
  v_parked := EXISTS (SELECT 1 FROM downstream_waiters WHERE key = 'webhook:' || p_endpoint::text)
           OR EXISTS (SELECT 1 FROM downstreams WHERE key = 'webhook:' || p_endpoint::text
                        AND (circuit = 'open' AND retry_at > now() OR blocked_until > now())
                        AND probe_holder IS NOT NULL);
  v_input := jsonb_build_object('deliveryId', v_delivery);
  INSERT INTO jobs (id, tenant_id, type, queue, priority, status, input, input_hash, max_attempts,
                    created_by_id, replay_of_id, run_at, updated_at)
  VALUES (v_job, v_tenant, 'webhook_delivery', 'webhooks', 0, 'queued', v_input,
          encode(sha256(convert_to('webhook_delivery:' || v_input::text, 'UTF8')), 'hex'),
          1000, p_created_by, v_old,
          CASE WHEN v_parked THEN now() + interval '10 minutes' ELSE now() END, now());
  IF v_parked THEN
    INSERT INTO downstream_waiters (key, holder) VALUES ('webhook:' || p_endpoint::text, v_job);
  END IF;
  RETURN v_job;
END $$;

-- Job events: a job (not a webhook delivery, not an export's part) that ended
-- tells the tenant's endpoints, in the transaction that ended it.
CREATE FUNCTION "conveyor_webhook_job_ended"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM conveyor_webhook_emit(NEW.tenant_id, 'job.' || NEW.status::text,
    jsonb_build_object('jobId', NEW.id, 'type', NEW.type, 'status', NEW.status, 'attempts', NEW.attempts,
                       'error', CASE WHEN NEW.status = 'succeeded' THEN NULL
                                     ELSE jsonb_build_object('class', NEW.error_class, 'message', NEW.error_message) END,
                       'createdAt', NEW.created_at, 'finishedAt', NEW.finished_at),
    NEW.id);
  RETURN NULL;
END $$;

CREATE TRIGGER "jobs_webhook_ended" AFTER UPDATE OF "status" ON "jobs"
  FOR EACH ROW WHEN (NEW.status IN ('succeeded', 'failed', 'cancelled') AND OLD.status IS DISTINCT FROM NEW.status
                     AND NEW.type <> 'webhook_delivery' AND NEW.parent_id IS NULL)
  EXECUTE FUNCTION "conveyor_webhook_job_ended"();

-- The webhooks queue: many endpoints of one tenant may be in flight at once
-- (each endpoint limits itself through its downstream guard).
INSERT INTO "queues" ("name", "tenant_cap", "max_admitted") VALUES ('webhooks', 32, 64) ON CONFLICT DO NOTHING;
