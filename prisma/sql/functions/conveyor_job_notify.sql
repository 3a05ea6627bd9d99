CREATE OR REPLACE FUNCTION public.conveyor_job_notify()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  IF NEW.seq IS DISTINCT FROM OLD.seq THEN
    PERFORM pg_notify('conveyor_job_events', json_build_object(
      'tenantId', NEW.tenant_id,
      'jobId', NEW.id,
      'seq', NEW.seq,
      'type', NEW.type,
      'status', NEW.status,
      'attempts', NEW.attempts,
      'done', NEW.progress_done,
      'total', NEW.progress_total,
      'unit', NEW.progress_unit,
      'stage', NEW.progress_stage,
      'message', left(NEW.progress_message, 300),
      'bytes', NEW.progress_bytes,
      -- The structured detail the kinds word progress from; a large one (over 2 kB) stays out of the
      -- payload (NOTIFY's limit is 8 kB) and reaches clients with the next snapshot.
      'detail', CASE WHEN octet_length(NEW.progress_detail::text) <= 2048 THEN NEW.progress_detail END,
      -- At most 20 (time, done) pairs (conveyor_job_progress_sample): the rate is made from them.
      'samples', NEW.progress_samples,
      'children', CASE WHEN NEW.children_total IS NULL THEN NULL
                       ELSE json_build_object('total', NEW.children_total, 'done', NEW.children_done,
                                              'failed', NEW.children_failed,
                                              'retrying', coalesce(NEW.children_retrying, 0),
                                              'retries', coalesce(NEW.children_retries, '[]'::jsonb)) END,
      'cancelRequested', NEW.cancel_requested_at IS NOT NULL,
      'admission', CASE WHEN NEW.status NOT IN ('queued', 'retrying') THEN NULL
                        WHEN NEW.admitted_at IS NOT NULL THEN 'admitted'
                        WHEN conveyor_paused(NEW.queue, NEW.type, NEW.tenant_id) THEN 'paused'
                        ELSE 'waiting' END,
      'at', to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
    )::text);
  END IF;
  RETURN NULL;
END $function$;
