CREATE OR REPLACE FUNCTION public.conveyor_webhook_wanted(p_tenant uuid, p_event text)
 RETURNS boolean
 LANGUAGE sql
 STABLE
AS $function$
  SELECT EXISTS (SELECT 1 FROM webhook_endpoints
                  WHERE tenant_id = p_tenant AND disabled_at IS NULL AND p_event = ANY (events))
$function$;
