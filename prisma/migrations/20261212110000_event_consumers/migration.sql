-- Events reach workloads through the engine (issue 33): `jobs` carries no workload's trigger.
-- The engine's job-ended trigger (a top-level job that succeeded, failed or was cancelled) and a
-- workload's own events (an export's `export.ready`, lib/events/outbox.ts) go to
-- conveyor_event_emit, which hands each to every consumer registered in event_consumers, in the
-- transaction of what caused it: never lost, never about work that rolled back. A consumer is
-- two functions of its workload: `wanted(tenant uuid, event text) → boolean` (whether it wants the
-- event at all: callers skip work that only serves unwanted events) and
-- `consume(tenant uuid, event text, data jsonb, job uuid) → void`.
-- Webhooks become the first consumer (replacing the jobs_webhook_ended trigger).

CREATE TABLE "event_consumers" (
    "name" TEXT NOT NULL,
    "wanted_function" TEXT NOT NULL,
    "consume_function" TEXT NOT NULL,
    CONSTRAINT "event_consumers_pkey" PRIMARY KEY ("name")
);

CREATE FUNCTION "conveyor_event_wanted"(p_tenant uuid, p_event text) RETURNS boolean LANGUAGE plpgsql AS $$
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
END $$;

CREATE FUNCTION "conveyor_event_emit"(p_tenant uuid, p_event text, p_data jsonb, p_job uuid) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  c record;
BEGIN
  FOR c IN SELECT consume_function FROM event_consumers ORDER BY name LOOP
    EXECUTE format('SELECT %I($1, $2, $3, $4)', c.consume_function) USING p_tenant, p_event, p_data, p_job;
  END LOOP;
END $$;

CREATE FUNCTION "conveyor_job_ended"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM conveyor_event_emit(NEW.tenant_id, 'job.' || NEW.status::text,
    jsonb_build_object('jobId', NEW.id, 'type', NEW.type, 'status', NEW.status, 'attempts', NEW.attempts,
                       'error', CASE WHEN NEW.status = 'succeeded' THEN NULL
                                     ELSE jsonb_build_object('class', NEW.error_class, 'message', NEW.error_message) END,
                       'createdAt', NEW.created_at, 'finishedAt', NEW.finished_at),
    NEW.id);
  RETURN NULL;
END $$;

DROP TRIGGER "jobs_webhook_ended" ON "jobs";
DROP FUNCTION "conveyor_webhook_job_ended"();

-- Named to fire after jobs' other AFTER UPDATE triggers (Postgres fires them by name), as
-- jobs_webhook_ended did.
CREATE TRIGGER "jobs_tell_ended" AFTER UPDATE OF "status" ON "jobs"
  FOR EACH ROW WHEN (NEW.status IN ('succeeded', 'failed', 'cancelled') AND OLD.status IS DISTINCT FROM NEW.status
                     AND NEW.parent_id IS NULL)
  EXECUTE FUNCTION "conveyor_job_ended"();

-- The webhooks workload's consumer: an event for the tenant's endpoints that want it (its own
-- deliveries' ends excepted).
CREATE FUNCTION "conveyor_webhook_wanted"(p_tenant uuid, p_event text) RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT EXISTS (SELECT 1 FROM webhook_endpoints
                  WHERE tenant_id = p_tenant AND disabled_at IS NULL AND p_event = ANY (events))
$$;

CREATE FUNCTION "conveyor_webhook_consume"(p_tenant uuid, p_event text, p_data jsonb, p_job uuid) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  IF p_event LIKE 'job.%' AND p_data ->> 'type' = 'webhook_delivery' THEN
    RETURN;
  END IF;
  PERFORM conveyor_webhook_emit(p_tenant, p_event, p_data, p_job);
END $$;

INSERT INTO "event_consumers" ("name", "wanted_function", "consume_function")
VALUES ('webhooks', 'conveyor_webhook_wanted', 'conveyor_webhook_consume');
