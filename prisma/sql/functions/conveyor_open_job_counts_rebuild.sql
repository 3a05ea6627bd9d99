CREATE OR REPLACE FUNCTION public.conveyor_open_job_counts_rebuild()
 RETURNS void
 LANGUAGE plpgsql
AS $function$
BEGIN
  LOCK TABLE jobs IN SHARE MODE;
  DELETE FROM open_job_counts;
  INSERT INTO open_job_counts (tenant_id, user_id, shard, open)
  SELECT j.tenant_id, v.u, 0, count(*)
    FROM jobs j, LATERAL (VALUES ('00000000-0000-0000-0000-000000000000'::uuid), (j.created_by_id)) v(u)
   WHERE j.parent_id IS NULL AND j.status IN ('scheduled', 'queued', 'running', 'retrying') AND v.u IS NOT NULL
   GROUP BY 1, 2;
END $function$;
