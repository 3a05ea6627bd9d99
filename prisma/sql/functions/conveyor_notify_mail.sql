CREATE OR REPLACE FUNCTION public.conveyor_notify_mail(p_tenant uuid, p_input jsonb)
 RETURNS uuid
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_job uuid := conveyor_uuid_v7();
BEGIN
  INSERT INTO jobs (id, tenant_id, type, queue, priority, status, input, input_hash, max_attempts, run_at, updated_at)
  VALUES (v_job, p_tenant, 'notification_mail', 'bulk', 0, 'queued', p_input,
          encode(sha256(convert_to('notification_mail:' || p_input::text, 'UTF8')), 'hex'), 7, now(), now());
  RETURN v_job;
END $function$;
