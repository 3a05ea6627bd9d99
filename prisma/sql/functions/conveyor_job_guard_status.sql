CREATE OR REPLACE FUNCTION public.conveyor_job_guard_status()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  IF NEW.status = OLD.status THEN
    RETURN NEW;
  END IF;
  IF (OLD.status, NEW.status) IN (
    ('scheduled', 'queued'), ('scheduled', 'cancelled'),
    ('queued', 'running'), ('queued', 'cancelled'), ('queued', 'failed'),
    ('running', 'succeeded'), ('running', 'failed'), ('running', 'cancelled'), ('running', 'retrying'),
    ('retrying', 'queued'), ('retrying', 'running'), ('retrying', 'cancelled'), ('retrying', 'failed'),
    ('succeeded', 'expired')
  ) THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'job % cannot move from % to %', OLD.id, OLD.status, NEW.status
    USING ERRCODE = 'check_violation';
END $function$;
