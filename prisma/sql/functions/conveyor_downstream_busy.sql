CREATE OR REPLACE FUNCTION public.conveyor_downstream_busy(p_key text)
 RETURNS integer
 LANGUAGE sql
 STABLE
AS $function$
  -- The calls to p_key in flight: slots not expired whose holder is running under a live lease.
  -- A crashed holder's slot stops counting once its lease runs out (conveyor_downstream_acquire
  -- deletes it then; the reaper, taking the attempt back, deletes it: conveyor_downstream_drop_holder).
  SELECT count(*)::integer FROM downstream_slots s
   WHERE s.key = p_key AND s.expires_at >= clock_timestamp()
     AND EXISTS (SELECT 1 FROM jobs j WHERE j.id = s.holder AND j.status = 'running'
                   AND (j.lease_expires_at IS NULL OR j.lease_expires_at > clock_timestamp()))
$function$;
