CREATE OR REPLACE FUNCTION public.conveyor_job_progress_sample()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
  -- The database's clock, in ms since the epoch: every sample of every job on one clock.
  t bigint := (extract(epoch FROM now()) * 1000)::bigint;
  s jsonb;
  n int;
BEGIN
  -- A new status (a new run, a retry's wait, an end) starts over: an earlier run's speed is no
  -- evidence of this one's, and a job that ended has no rate.
  IF NEW.status IS DISTINCT FROM OLD.status THEN
    NEW.progress_samples := NULL;
    RETURN NEW;
  END IF;
  s := coalesce(OLD.progress_samples, '[]'::jsonb);
  n := jsonb_array_length(s);
  -- Kept samples are 2 s apart: the newest is replaced while it is within 2 s of the one before.
  IF n >= 2 AND t - (s->(n - 2)->>0)::bigint < 2000 THEN
    s := s - (n - 1);
  END IF;
  s := s || jsonb_build_array(jsonb_build_array(t, NEW.progress_done));
  -- The window is 30 s (lib/jobs/progress-rate.ts): keep it and the one sample before it.
  WHILE jsonb_array_length(s) > 2 AND ((s->1->>0)::bigint <= t - 30000 OR jsonb_array_length(s) > 20) LOOP
    s := s - 0;
  END LOOP;
  NEW.progress_samples := s;
  RETURN NEW;
END $function$;
