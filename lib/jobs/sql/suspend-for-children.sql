-- Suspends an attempt until its child jobs end, fenced by its token (see wait-for-children.ts):
-- $1 job, $2 token, $3 checkpoint, $4 attempt id, $5 child count, $6 children (json), $7 roll-up,
-- $8 trace context.
WITH parent AS (
  UPDATE jobs SET checkpoint = $3::jsonb, waiting_since = now(), lease_owner = NULL, lease_expires_at = NULL,
         admitted_at = NULL, fencing_token = fencing_token + 1, progress_stage = 'waiting',
         children_total = $5::int, children_done = 0, children_failed = 0, rollup_progress = $7,
         updated_at = now()
  WHERE id = $1 AND fencing_token = $2 AND status = 'running'
    AND cancel_requested_at IS NULL -- a cancel that raced the fan-out: no children, the attempt ends cancelled
  RETURNING id, tenant_id, priority, created_by_id
), children AS (
  INSERT INTO jobs (id, tenant_id, type, queue, priority, status, input, input_hash, max_attempts,
                    parent_id, child_index, created_by_id, updated_at, trace_context)
  SELECT c.id, p.tenant_id, c.type, c.queue, p.priority, 'queued', c.input, c.input_hash, c.max_attempts,
         p.id, c.child_index, p.created_by_id, now(), $8::jsonb
  FROM parent p,
       jsonb_to_recordset($6::jsonb) AS c(id uuid, type text, queue text, input jsonb, input_hash text,
                                         max_attempts int, child_index int)
  ORDER BY c.child_index
  RETURNING 1
), attempt AS (
  UPDATE job_attempts SET outcome = 'waiting', finished_at = now(),
         duration_ms = (extract(epoch FROM now() - started_at) * 1000)::int
  WHERE id = $4 AND outcome = 'running' AND EXISTS (SELECT 1 FROM parent)
)
SELECT EXISTS (SELECT 1 FROM parent) AS "held!", (SELECT count(*) FROM children) AS made
