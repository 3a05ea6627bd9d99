CREATE OR REPLACE FUNCTION public.conveyor_quota_refusal(p_tenant uuid, p_user uuid, p_export_bytes boolean, p_per_user integer, p_per_tenant integer, p_bytes bigint, p_pending_user integer DEFAULT 0, p_pending_tenant integer DEFAULT 0)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_per_user integer;
  v_per_tenant integer;
  v_bytes_limit bigint;
  v_used bigint;
BEGIN
  SELECT coalesce(quota_jobs_per_user, p_per_user), coalesce(quota_jobs_per_tenant, p_per_tenant),
         coalesce(quota_export_bytes, p_bytes)
    INTO v_per_user, v_per_tenant, v_bytes_limit
    FROM tenants WHERE id = p_tenant;
  IF NOT FOUND THEN RETURN NULL; END IF;
  IF p_user IS NOT NULL THEN
    SELECT coalesce(sum(open), 0) + p_pending_user INTO v_used FROM open_job_counts
     WHERE tenant_id = p_tenant AND user_id = p_user;
    IF v_used >= v_per_user THEN
      RETURN jsonb_build_object('quota', 'jobs_per_user', 'limit', v_per_user, 'used', v_used);
    END IF;
  END IF;
  SELECT coalesce(sum(open), 0) + p_pending_tenant INTO v_used FROM open_job_counts
   WHERE tenant_id = p_tenant AND user_id = '00000000-0000-0000-0000-000000000000'::uuid;
  IF v_used >= v_per_tenant THEN
    RETURN jsonb_build_object('quota', 'jobs_per_tenant', 'limit', v_per_tenant, 'used', v_used);
  END IF;
  IF p_export_bytes THEN
    -- The bytes the tenant keeps: its live export files that have not expired, and its live uploads.
    v_used := coalesce((SELECT export_bytes + upload_bytes FROM tenant_storage WHERE tenant_id = p_tenant), 0)
            - (SELECT coalesce(sum(size), 0) FROM export_files
                WHERE tenant_id = p_tenant AND deleted_at IS NULL AND expires_at <= now());
    IF v_used >= v_bytes_limit THEN
      RETURN jsonb_build_object('quota', 'export_bytes', 'limit', v_bytes_limit, 'used', v_used);
    END IF;
  END IF;
  RETURN NULL;
END $function$;
