CREATE OR REPLACE FUNCTION public.conveyor_webhook_consume(p_tenant uuid, p_event text, p_data jsonb, p_job uuid)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
BEGIN
  -- The platform's own messengers are not the tenant's work: a delivery's or a notification mail's
  -- end is told to no endpoint (a delivery's would loop).
  IF p_event LIKE 'job.%' AND p_data ->> 'type' IN ('webhook_delivery', 'notification_mail') THEN
    RETURN;
  END IF;
  PERFORM conveyor_webhook_emit(p_tenant, p_event, p_data, p_job);
END $function$;
