CREATE OR REPLACE FUNCTION public.conveyor_open_jobs_changed()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  IF OLD.parent_id IS NULL AND OLD.status IN ('scheduled', 'queued', 'running', 'retrying') THEN
    PERFORM conveyor_open_jobs_add(OLD.tenant_id, OLD.created_by_id, -1);
  END IF;
  IF TG_OP = 'UPDATE' AND NEW.parent_id IS NULL AND NEW.status IN ('scheduled', 'queued', 'running', 'retrying') THEN
    PERFORM conveyor_open_jobs_add(NEW.tenant_id, NEW.created_by_id, 1);
  END IF;
  RETURN NULL;
END $function$;
