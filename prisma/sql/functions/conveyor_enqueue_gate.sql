CREATE OR REPLACE FUNCTION public.conveyor_enqueue_gate(p_tenant uuid, p_user uuid, p_export_bytes boolean, p_per_user integer, p_per_tenant integer, p_bytes bigint, p_pending_user integer DEFAULT 0, p_pending_tenant integer DEFAULT 0)
 RETURNS boolean
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_key integer := hashtext(p_tenant::text);
  v_refusal jsonb;
BEGIN
  IF NOT pg_try_advisory_xact_lock(hashtext('conveyor_enqueue'), v_key) THEN
    v_refusal := conveyor_quota_refusal(p_tenant, p_user, p_export_bytes, p_per_user, p_per_tenant, p_bytes,
                                        p_pending_user, p_pending_tenant);
    IF v_refusal IS NOT NULL THEN
      RAISE EXCEPTION USING ERRCODE = 'CQ001', MESSAGE = v_refusal::text;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtext('conveyor_enqueue'), v_key);
  END IF;
  v_refusal := conveyor_quota_refusal(p_tenant, p_user, p_export_bytes, p_per_user, p_per_tenant, p_bytes,
                                      p_pending_user, p_pending_tenant);
  IF v_refusal IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'CQ001', MESSAGE = v_refusal::text;
  END IF;
  RETURN true;
END $function$;
