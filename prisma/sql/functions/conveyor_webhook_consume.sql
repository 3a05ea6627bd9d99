CREATE OR REPLACE FUNCTION public.conveyor_webhook_consume(p_tenant uuid, p_event text, p_data jsonb, p_job uuid)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
BEGIN
  IF p_event LIKE 'job.%' AND p_data ->> 'type' = 'webhook_delivery' THEN
    RETURN;
  END IF;
  PERFORM conveyor_webhook_emit(p_tenant, p_event, p_data, p_job);
END $function$;
