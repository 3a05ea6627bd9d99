CREATE OR REPLACE FUNCTION public.conveyor_notify_consume(p_tenant uuid, p_event text, p_data jsonb, p_job uuid)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_owner uuid;
  v_canceller uuid;
  v_kind text;
  v_email boolean;
  v_id uuid;
  v_mail uuid;
  v_outcome text := p_data ->> 'status';
BEGIN
  IF NOT conveyor_notify_wanted(p_tenant, p_event) OR p_job IS NULL THEN
    RETURN;
  END IF;
  SELECT created_by_id, cancel_requested_by_id INTO v_owner, v_canceller FROM jobs WHERE id = p_job;
  IF v_owner IS NULL OR (v_outcome = 'cancelled' AND v_canceller = v_owner)
     OR NOT EXISTS (SELECT 1 FROM memberships WHERE user_id = v_owner AND tenant_id = p_tenant) THEN
    RETURN;
  END IF;
  SELECT k.kind, coalesce(p.email, k.email_default) INTO v_kind, v_email
    FROM notification_kinds k
    LEFT JOIN notification_preferences p ON p.user_id = v_owner AND p.tenant_id = p_tenant AND p.kind = k.kind
   WHERE k.audience = 'members'
     AND k.kind = CASE WHEN EXISTS (SELECT 1 FROM schedule_runs WHERE job_id = p_job) THEN 'schedule'
                       ELSE p_data ->> 'type' END;
  IF v_kind IS NULL THEN
    RETURN;
  END IF;
  v_id := conveyor_uuid_v7();
  INSERT INTO notifications (id, tenant_id, user_id, job_id, kind, job_type, outcome, error_message)
  VALUES (v_id, p_tenant, v_owner, p_job, v_kind, p_data ->> 'type', v_outcome, p_data -> 'error' ->> 'message')
  ON CONFLICT (job_id, user_id) DO NOTHING;
  IF FOUND AND v_email THEN
    v_mail := conveyor_notify_mail(p_tenant, jsonb_build_object('notificationId', v_id));
    UPDATE notifications SET mail_job_id = v_mail WHERE id = v_id;
    -- The mail is part of the work it tells of: its attempt continues that job's trace (lib/tracing.ts).
    UPDATE jobs SET trace_context = (SELECT trace_context FROM jobs WHERE id = p_job) WHERE id = v_mail;
  END IF;
END $function$;
