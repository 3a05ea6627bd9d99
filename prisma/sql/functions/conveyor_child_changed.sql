CREATE OR REPLACE FUNCTION public.conveyor_child_changed()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
  p record;
  agg record;
BEGIN
  IF NEW.status IS DISTINCT FROM OLD.status THEN
    SELECT id, waiting_since, updated_at, rollup_progress, queue INTO p FROM jobs WHERE id = NEW.parent_id FOR UPDATE;
  ELSE
    -- Progress only: skip when the parent is busy (another child's write, a cancel) or was
    -- updated in the last 250 ms; the next write or the child's end brings it up to date.
    -- This also throttles the parent's NOTIFYs however many children run.
    SELECT id, waiting_since, updated_at, rollup_progress, queue INTO p FROM jobs WHERE id = NEW.parent_id FOR UPDATE SKIP LOCKED;
    IF p.id IS NOT NULL AND p.updated_at > now() - interval '250 milliseconds' THEN
      RETURN NULL;
    END IF;
  END IF;
  IF p.id IS NULL OR p.waiting_since IS NULL THEN
    RETURN NULL;
  END IF;
  SELECT count(*)::int AS total,
         count(*) FILTER (WHERE status = 'succeeded')::int AS done,
         count(*) FILTER (WHERE status IN ('failed', 'cancelled'))::int AS failed,
         count(*) FILTER (WHERE status NOT IN ('succeeded', 'failed', 'cancelled', 'expired')) AS open,
         coalesce(sum(progress_done), 0) AS rows_done,
         coalesce(sum(greatest(coalesce(progress_total, 0), progress_done)), 0) AS rows_total,
         coalesce(sum((result->>'size')::bigint) FILTER (WHERE status = 'succeeded'), 0) AS bytes
    INTO agg
  FROM jobs WHERE parent_id = NEW.parent_id;
  IF agg.open = 0 THEN
    -- The last child's end also brings a rolled-up parent's progress up to date (the children's
    -- progress-only writes before it may have been skipped by the throttle below).
    UPDATE jobs SET status = 'retrying', waiting_since = NULL, admitted_at = NULL, run_at = now(),
                    resume_pending = true,
                    progress_done = CASE WHEN p.rollup_progress THEN greatest(progress_done, agg.rows_done) ELSE progress_done END,
                    progress_total = CASE WHEN p.rollup_progress
                                          THEN greatest(coalesce(progress_total, 0), agg.rows_total, agg.rows_done)
                                          ELSE progress_total END,
                    children_total = agg.total, children_done = agg.done, children_failed = agg.failed,
                    progress_bytes = agg.bytes, updated_at = now()
    WHERE id = p.id;
    -- Its queue's admitters run now (at commit), not at their next sweep: a pipeline's next stage,
    -- an export's zip, start within milliseconds of the last child's end.
    PERFORM pg_notify('conveyor_admit', p.queue);
  ELSIF NOT p.rollup_progress THEN
    -- A pipeline: its progress is its own ("stage 2 of 5"); only the counts follow its children.
    UPDATE jobs SET children_total = agg.total, children_done = agg.done, children_failed = agg.failed,
                    updated_at = now()
    WHERE id = p.id;
  ELSE
    UPDATE jobs SET progress_done = greatest(progress_done, agg.rows_done),
                    progress_total = greatest(coalesce(progress_total, 0), agg.rows_total, agg.rows_done),
                    children_total = agg.total, children_done = agg.done, children_failed = agg.failed,
                    progress_bytes = agg.bytes, updated_at = now()
    WHERE id = p.id;
  END IF;
  RETURN NULL;
END $function$;
