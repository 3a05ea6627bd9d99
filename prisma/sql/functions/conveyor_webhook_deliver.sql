CREATE OR REPLACE FUNCTION public.conveyor_webhook_deliver(p_message text, p_endpoint uuid, p_created_by uuid DEFAULT NULL::uuid)
 RETURNS uuid
 LANGUAGE plpgsql
AS $function$
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
END $function$;
