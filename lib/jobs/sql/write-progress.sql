-- Writes a running attempt's progress, fenced by its token $2: done ($3) never moves backwards;
-- fields left out ($4 false, nulls) keep their value.
-- @prepare
UPDATE jobs SET
   progress_done = GREATEST(progress_done, $3::bigint),
   progress_total = CASE WHEN $4::boolean THEN $5::bigint ELSE progress_total END,
   progress_unit = coalesce($6, progress_unit),
   progress_stage = coalesce($7, progress_stage),
   progress_detail = coalesce($8::jsonb, progress_detail),
   progress_bytes = coalesce($9::bigint, progress_bytes),
   updated_at = now()
 WHERE id = $1 AND fencing_token = $2 AND status = 'running'
