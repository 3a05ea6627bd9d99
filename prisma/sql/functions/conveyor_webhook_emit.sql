CREATE OR REPLACE FUNCTION public.conveyor_webhook_emit(p_tenant uuid, p_event text, p_data jsonb, p_job uuid, p_endpoint uuid DEFAULT NULL::uuid)
 RETURNS text
 LANGUAGE plpgsql
AS $function$
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
END $function$;
