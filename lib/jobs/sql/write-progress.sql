-- Writes running attempts' progress in one statement (lib/jobs/progress-writer.ts batches them),
-- each fenced by its token: $1 ids, $2 tokens, $3 done (never moves backwards), $4 whether total
-- is set, $5 total, $6 unit, $7 stage, $8 detail, $9 bytes; nulls (and $4 false) keep the value.
-- Returns the ids whose fence held.
-- @prepare
WITH req AS (
  SELECT * FROM unnest($1::uuid[], $2::bigint[], $3::bigint[], $4::boolean[], $5::bigint[], $6::text[],
                       $7::text[], $8::jsonb[], $9::bigint[])
    AS r(id, token, done, has_total, total, unit, stage, detail, bytes)
)
UPDATE jobs SET
   progress_done = GREATEST(progress_done, req.done),
   progress_total = CASE WHEN req.has_total THEN req.total ELSE progress_total END,
   progress_unit = coalesce(req.unit, progress_unit),
   progress_stage = coalesce(req.stage, progress_stage),
   progress_detail = coalesce(req.detail, progress_detail),
   progress_bytes = coalesce(req.bytes, progress_bytes),
   updated_at = now()
  FROM req
 WHERE jobs.id = ANY($1::uuid[]) AND jobs.id = req.id AND jobs.fencing_token = req.token
   AND jobs.status::text = 'running'
RETURNING jobs.id::text AS "id!"
