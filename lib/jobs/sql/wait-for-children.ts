/**
 * Suspends an attempt until its child jobs end, in one statement fenced by its
 * token: the children are inserted (admitted inline where there is room), the
 * checkpoint is saved, and the job stays `running` but gives up its lease, its
 * admission slot and its fencing token (so the suspended attempt's heartbeat
 * can write nothing more); the attempt row ends as `waiting`. The database
 * wakes the job when the last child ends (trigger `jobs_child_changed`) and the
 * next claim resumes the same attempt. False when the token no longer matches,
 * or a cancel request came first (then no child is made).
 */
import type { SqlClient } from "../../db";

export type ChildRow = {
  id: string;
  type: string;
  queue: string;
  input: unknown;
  inputHash: string;
  maxAttempts: number;
  /** Its place among the parent's children; default: its place in this fan-out. */
  index?: number;
};

export async function suspendForChildren(
  client: SqlClient,
  opts: {
    jobId: string;
    token: bigint;
    attemptId: bigint;
    checkpoint: unknown;
    children: ChildRow[];
    /** False: the parent's progress stays its own (a pipeline's stages) instead of the children's sum. */
    rollup?: boolean;
    /** The fanning-out attempt's trace context, stored with every child so the tree is one trace. */
    traceContext?: unknown;
  },
): Promise<boolean> {
  const children = opts.children.map((c, index) => ({
    id: c.id,
    type: c.type,
    queue: c.queue,
    input: c.input,
    input_hash: c.inputHash,
    max_attempts: c.maxAttempts,
    child_index: c.index ?? index,
  }));
  const { rows } = await client.query<{ held: boolean }>(
    `WITH parent AS (
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
     SELECT EXISTS (SELECT 1 FROM parent) AS held, (SELECT count(*) FROM children) AS made`,
    [
      opts.jobId,
      opts.token.toString(),
      JSON.stringify(opts.checkpoint ?? null),
      opts.attemptId.toString(),
      children.length,
      JSON.stringify(children),
      opts.rollup ?? true,
      opts.traceContext == null ? null : JSON.stringify(opts.traceContext),
    ],
  );
  return rows[0]?.held === true;
}
