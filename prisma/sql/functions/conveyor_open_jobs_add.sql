CREATE OR REPLACE FUNCTION public.conveyor_open_jobs_add(p_tenant uuid, p_user uuid, p_delta bigint)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
BEGIN
  INSERT INTO open_job_counts AS c (tenant_id, user_id, shard, open)
  SELECT p_tenant, u, pg_backend_pid(), p_delta
    FROM unnest(ARRAY['00000000-0000-0000-0000-000000000000'::uuid, p_user]) u WHERE u IS NOT NULL
  ON CONFLICT (tenant_id, user_id, shard) DO UPDATE SET open = c.open + EXCLUDED.open;
END $function$;
