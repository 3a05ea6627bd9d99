CREATE OR REPLACE FUNCTION public.conveyor_dispatch(p_id uuid, p_queue text, p_type text)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
BEGIN
  -- max_attempts: graphile retries a dispatch only when the task itself throws
  -- (the database was unreachable before our claim); a handler's failure never reaches it.
  -- No priority: admission ordered the job (its tenant's by priority, tenants by the
  -- round-robin); a graphile priority would let it overtake other tenants' admitted jobs.
  PERFORM graphile_worker.add_job(p_queue || ':' || p_type, json_build_object('jobId', p_id::text),
    run_at => now(), max_attempts => 5, job_key => p_id::text);
END $function$;
