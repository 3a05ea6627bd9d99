CREATE OR REPLACE FUNCTION public.conveyor_gate_scheduled_runs(p_tenants uuid[], p_users uuid[], p_export_bytes boolean[], p_schedules uuid[], p_times timestamp with time zone[], p_per_user integer, p_per_tenant integer, p_bytes bigint)
 RETURNS jsonb[]
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_key integer;
  v_out jsonb[] := '{}';
  -- Runs let through so far, by tenant and by tenant and owner (the counts take them in at the INSERT).
  v_pending jsonb := '{}';
  v_user_key text;
  v_pu integer;
  v_pt integer;
  v_refusal jsonb;
BEGIN
  FOR v_key IN SELECT DISTINCT hashtext(t::text) FROM unnest(p_tenants) t ORDER BY 1 LOOP
    PERFORM pg_advisory_xact_lock(hashtext('conveyor_enqueue'), v_key);
  END LOOP;
  FOR i IN 1 .. coalesce(array_length(p_tenants, 1), 0) LOOP
    IF EXISTS (SELECT 1 FROM schedule_runs WHERE schedule_id = p_schedules[i] AND scheduled_for = p_times[i]) THEN
      v_out := array_append(v_out, NULL::jsonb);
      CONTINUE;
    END IF;
    v_user_key := p_tenants[i]::text || '/' || coalesce(p_users[i]::text, '');
    v_pu := coalesce((v_pending ->> v_user_key)::integer, 0);
    v_pt := coalesce((v_pending ->> p_tenants[i]::text)::integer, 0);
    v_refusal := conveyor_quota_refusal(p_tenants[i], p_users[i], p_export_bytes[i], p_per_user, p_per_tenant,
                                        p_bytes, v_pu, v_pt);
    IF v_refusal IS NULL THEN
      v_pending := v_pending || jsonb_build_object(v_user_key, v_pu + 1, p_tenants[i]::text, v_pt + 1);
    END IF;
    v_out := array_append(v_out, v_refusal);
  END LOOP;
  RETURN v_out;
END $function$;
