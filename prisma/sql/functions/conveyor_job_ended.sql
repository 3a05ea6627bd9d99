CREATE OR REPLACE FUNCTION public.conveyor_job_ended()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  PERFORM conveyor_event_emit(NEW.tenant_id, 'job.' || NEW.status::text,
    jsonb_build_object('jobId', NEW.id, 'type', NEW.type, 'status', NEW.status, 'attempts', NEW.attempts,
                       'error', CASE WHEN NEW.status = 'succeeded' THEN NULL
                                     ELSE jsonb_build_object('class', NEW.error_class, 'message', NEW.error_message) END,
                       'createdAt', NEW.created_at, 'finishedAt', NEW.finished_at),
    NEW.id);
  RETURN NULL;
END $function$;
