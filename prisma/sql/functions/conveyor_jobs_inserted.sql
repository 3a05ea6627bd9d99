CREATE OR REPLACE FUNCTION public.conveyor_jobs_inserted()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  PERFORM pg_notify('conveyor_job_events', json_build_object(
      'tenantId', n.tenant_id,
      'jobId', n.id,
      'seq', n.seq,
      'type', n.type,
      'status', n.status,
      'attempts', n.attempts,
      'done', n.progress_done,
      'total', n.progress_total,
      'unit', n.progress_unit,
      'stage', n.progress_stage,
      'message', left(n.progress_message, 300),
      'bytes', n.progress_bytes,
      -- The structured detail the kinds word progress from; a large one (over 2 kB) stays out of the
      -- payload (NOTIFY's limit is 8 kB) and reaches clients with the next snapshot.
      'detail', CASE WHEN octet_length(n.progress_detail::text) <= 2048 THEN n.progress_detail END,
      'samples', n.progress_samples,
      'children', CASE WHEN n.children_total IS NULL THEN NULL
                       ELSE json_build_object('total', n.children_total, 'done', n.children_done,
                                              'failed', n.children_failed,
                                              'retrying', coalesce(n.children_retrying, 0),
                                              'retries', coalesce(n.children_retries, '[]'::jsonb)) END,
      'cancelRequested', n.cancel_requested_at IS NOT NULL,
      'admission', CASE WHEN n.status NOT IN ('queued', 'retrying') THEN NULL
                        WHEN n.admitted_at IS NOT NULL THEN 'admitted'
                        WHEN conveyor_paused(n.queue, n.type, n.tenant_id) THEN 'paused'
                        ELSE 'waiting' END,
      'at', to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
    )::text)
    FROM new_jobs n;
  INSERT INTO job_transitions (job_id, from_status, to_status, attempt)
  SELECT id, NULL, status, attempts FROM new_jobs;
  RETURN NULL;
END $function$;
