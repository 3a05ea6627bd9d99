CREATE OR REPLACE FUNCTION public.conveyor_child_changed()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
  p record;
  agg record;
  retries jsonb;
BEGIN
  -- A new status, or a retry's new time (an operator's "retry now"): always counted, waiting
  -- for the parent's lock.
  IF NEW.status IS DISTINCT FROM OLD.status OR NEW.run_at IS DISTINCT FROM OLD.run_at THEN
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
         coalesce(sum((result->>'size')::bigint) FILTER (WHERE status = 'succeeded'), 0) AS bytes,
         -- In a retry: waiting for its next attempt, or running one after a failed one.
         count(*) FILTER (WHERE status = 'retrying' OR (status = 'running' AND attempts > 1))::int AS retrying
    INTO agg
  FROM jobs c WHERE parent_id = NEW.parent_id
    -- A dead child replayed (replayOne: discarded, and a new child of the same parent that
    -- replays it) is counted once, as its replay: its rows and its end are the replay's. Its
    -- rows already counted keep the parent's done where it was (GREATEST below) until the
    -- replay passes them, so rows redone are neither counted twice nor taken back.
    AND (c.discarded_at IS NULL OR NOT EXISTS (SELECT 1 FROM jobs r WHERE r.replay_of_id = c.id));
  -- The first few of them, by place, as data (the words are made at the edge: "part 3 of 8
  -- retrying, attempt 2 of 3, next in 4s"); `attempt` is the one waiting or running.
  IF agg.retrying > 0 THEN
    SELECT jsonb_agg(jsonb_build_object(
             'index', r.place, 'status', r.status,
             'attempt', CASE WHEN r.status = 'retrying' THEN r.attempts + 1 ELSE r.attempts END,
             'maxAttempts', r.max_attempts,
             'runAt', to_char(r.run_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) ORDER BY r.place)
      INTO retries
    FROM (SELECT coalesce(c.child_index, o.child_index) AS place, c.status, c.attempts, c.max_attempts, c.run_at
          FROM jobs c LEFT JOIN jobs o ON o.id = c.replay_of_id -- a replay has its original's place
          WHERE c.parent_id = NEW.parent_id AND (c.status = 'retrying' OR (c.status = 'running' AND c.attempts > 1))
          ORDER BY place LIMIT 5) r;
  END IF;
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
                    children_retrying = agg.retrying, children_retries = retries,
                    progress_bytes = agg.bytes, updated_at = now()
    WHERE id = p.id;
    -- Its queue's admitters run now (at commit), not at their next sweep: a pipeline's next stage,
    -- an export's zip, start within milliseconds of the last child's end.
    PERFORM pg_notify('conveyor_admit', p.queue);
  ELSIF NOT p.rollup_progress THEN
    -- A pipeline: its progress is its own ("stage 2 of 5"); only the counts follow its children.
    UPDATE jobs SET children_total = agg.total, children_done = agg.done, children_failed = agg.failed,
                    children_retrying = agg.retrying, children_retries = retries,
                    updated_at = now()
    WHERE id = p.id;
  ELSE
    UPDATE jobs SET progress_done = greatest(progress_done, agg.rows_done),
                    progress_total = greatest(coalesce(progress_total, 0), agg.rows_total, agg.rows_done),
                    children_total = agg.total, children_done = agg.done, children_failed = agg.failed,
                    children_retrying = agg.retrying, children_retries = retries,
                    progress_bytes = agg.bytes, updated_at = now()
    WHERE id = p.id;
  END IF;
  RETURN NULL;
END $function$;
