CREATE OR REPLACE FUNCTION public.conveyor_jsonb_strip_keys(doc jsonb, keys text[])
 RETURNS jsonb
 LANGUAGE sql
 IMMUTABLE
AS $function$
  SELECT CASE jsonb_typeof(doc)
    WHEN 'object' THEN coalesce(
      (SELECT jsonb_object_agg(e.k, conveyor_jsonb_strip_keys(e.v, keys))
         FROM jsonb_each(doc) AS e(k, v) WHERE NOT e.k = ANY(keys)), '{}'::jsonb)
    WHEN 'array' THEN coalesce(
      (SELECT jsonb_agg(conveyor_jsonb_strip_keys(a.v, keys) ORDER BY a.i)
         FROM jsonb_array_elements(doc) WITH ORDINALITY AS a(v, i)), '[]'::jsonb)
    ELSE doc END
$function$;
