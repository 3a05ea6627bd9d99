CREATE OR REPLACE FUNCTION public.conveyor_paused(p_queue text, p_type text, p_tenant uuid)
 RETURNS boolean
 LANGUAGE sql
 STABLE
AS $function$
  SELECT EXISTS (
    SELECT 1 FROM queue_pauses p
    WHERE p.resumed_at IS NULL
      AND (p.queue IS NULL OR p.queue = p_queue)
      AND (p.type IS NULL OR p.type = p_type)
      AND (p.tenant_id IS NULL OR p.tenant_id = p_tenant))
$function$;
