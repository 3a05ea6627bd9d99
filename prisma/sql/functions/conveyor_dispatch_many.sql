CREATE OR REPLACE FUNCTION public.conveyor_dispatch_many(p_ids uuid[], p_queue text, p_types text[])
 RETURNS void
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_n integer := coalesce(array_length(p_ids, 1), 0);
BEGIN
  IF v_n = 0 THEN RETURN; END IF;
  -- In admission's order (run_at stepped back a microsecond per place), all at priority 0:
  -- admission already ordered them, and a graphile priority would reorder tenants' turns.
  PERFORM graphile_worker.add_jobs(array(
    SELECT ROW(p_queue || ':' || x.type, json_build_object('jobId', x.id::text), NULL,
               now() - (v_n - x.ord) * interval '1 microsecond', 5::smallint,
               x.id::text, 0::smallint, NULL)::graphile_worker.job_spec
      FROM unnest(p_ids, p_types) WITH ORDINALITY AS x(id, type, ord)
     ORDER BY x.ord));
END $function$;
