CREATE OR REPLACE FUNCTION public.conveyor_open_jobs_inserted()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  -- (conveyor_open_jobs_add, below, is resolved when this runs.)
  PERFORM conveyor_open_jobs_add(tenant_id, created_by_id, count(*))
     FROM new_jobs
    WHERE parent_id IS NULL AND status IN ('scheduled', 'queued', 'running', 'retrying')
    GROUP BY tenant_id, created_by_id;
  RETURN NULL;
END $function$;
