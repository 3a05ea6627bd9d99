CREATE OR REPLACE FUNCTION public.conveyor_open_job_counts_compact()
 RETURNS integer
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_moved integer;
BEGIN
  WITH gone AS (
    DELETE FROM open_job_counts
     WHERE shard <> 0 AND shard NOT IN (SELECT pid FROM pg_stat_activity WHERE pid IS NOT NULL)
    RETURNING tenant_id, user_id, open
  ), sums AS (
    SELECT tenant_id, user_id, sum(open)::bigint AS open, count(*) AS n FROM gone GROUP BY 1, 2
  ), folded AS (
    INSERT INTO open_job_counts AS c (tenant_id, user_id, shard, open)
    SELECT tenant_id, user_id, 0, open FROM sums ORDER BY 1, 2
    ON CONFLICT (tenant_id, user_id, shard) DO UPDATE SET open = c.open + EXCLUDED.open
  )
  SELECT coalesce(sum(n), 0) INTO v_moved FROM sums;
  DELETE FROM open_job_counts WHERE shard = 0 AND open = 0;
  RETURN v_moved;
END $function$;
