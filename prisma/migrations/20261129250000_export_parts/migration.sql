-- Exports at scale: a parent job fans out into child jobs (the parts) and waits
-- for them without holding a lease or an admission slot; the database wakes it
-- when the last part ends, and rolls the parts' progress up into it meanwhile.

ALTER TABLE "export_files" ADD COLUMN "partial" BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE "jobs" ADD COLUMN "waiting_since" TIMESTAMPTZ(3);

-- A waiting parent's row follows its children: on every change of a child's
-- status or progress, the parent's progress becomes the sum of its parts' (it
-- never moves backwards, also when a part retries and starts over), and when
-- the last child has ended the parent is handed back to admission (`retrying`,
-- due now) to assemble the result.
--
-- The parent row is locked first: two parts ending at once in two transactions
-- serialise here, and the second one's count (a new statement, a new snapshot
-- under READ COMMITTED) sees the first as ended, so exactly one of them wakes it.
-- Lock order is always child, then parent; whoever changes a parent and its
-- children together (cancelJob) locks the children first.
CREATE FUNCTION "conveyor_child_changed"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  p record;
  agg record;
BEGIN
  IF NEW.status IS DISTINCT FROM OLD.status THEN
    SELECT id, waiting_since, updated_at INTO p FROM jobs WHERE id = NEW.parent_id FOR UPDATE;
  ELSE
    -- Progress only: skip when the parent is busy (another part's write, a cancel) or was
    -- updated in the last 250 ms; the next write or the part's end brings it up to date.
    -- This also throttles the parent's NOTIFYs however many parts run.
    SELECT id, waiting_since, updated_at INTO p FROM jobs WHERE id = NEW.parent_id FOR UPDATE SKIP LOCKED;
    IF p.id IS NOT NULL AND p.updated_at > now() - interval '250 milliseconds' THEN
      RETURN NULL;
    END IF;
  END IF;
  IF p.id IS NULL OR p.waiting_since IS NULL THEN
    RETURN NULL;
  END IF;
  SELECT count(*) AS parts,
         count(*) FILTER (WHERE status = 'succeeded') AS done,
         count(*) FILTER (WHERE status NOT IN ('succeeded', 'failed', 'cancelled', 'expired')) AS open,
         coalesce(sum(progress_done), 0) AS rows_done,
         coalesce(sum(greatest(coalesce(progress_total, 0), progress_done)), 0) AS rows_total,
         coalesce(sum((result->>'size')::bigint) FILTER (WHERE status = 'succeeded'), 0) AS bytes
    INTO agg
  FROM jobs WHERE parent_id = NEW.parent_id;
  IF agg.open = 0 THEN
    UPDATE jobs SET status = 'retrying', waiting_since = NULL, admitted_at = NULL, run_at = now(),
                    progress_stage = 'assembling',
                    progress_message = format('%s of %s parts done; assembling', agg.done, agg.parts),
                    updated_at = now()
    WHERE id = p.id;
  ELSE
    UPDATE jobs SET progress_done = greatest(progress_done, agg.rows_done),
                    progress_total = greatest(coalesce(progress_total, 0), agg.rows_total, agg.rows_done),
                    progress_message = format('%s of %s parts done · %s', agg.done, agg.parts, pg_size_pretty(agg.bytes)),
                    updated_at = now()
    WHERE id = p.id;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER "jobs_child_changed" AFTER UPDATE OF "status", "progress_done" ON "jobs"
  FOR EACH ROW WHEN (NEW.parent_id IS NOT NULL AND (NEW.status IS DISTINCT FROM OLD.status OR NEW.progress_done IS DISTINCT FROM OLD.progress_done))
  EXECUTE FUNCTION "conveyor_child_changed"();

CREATE INDEX "jobs_waiting_parents_idx" ON "jobs" ("waiting_since") WHERE "waiting_since" IS NOT NULL;

-- The tenant event stream's resume (Last-Event-ID): jobs finished since then. finished_at is
-- written once per job, so progress updates stay eligible for HOT.
CREATE INDEX "jobs_finished_at_idx" ON "jobs"("finished_at");

-- A job waiting for its children runs on no worker, so a cancel request — from
-- cancelJob or from a pause that cancels running jobs alike — ends it at once.
-- (An AFTER trigger with its own UPDATE, so the status change passes the guard
-- and the transition record like any other.) The reaper then stops its children.
CREATE FUNCTION "conveyor_cancel_waiting"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE jobs SET status = 'cancelled', waiting_since = NULL, finished_at = now(), error_class = 'cancelled',
                  error_message = coalesce(regexp_replace(NEW.progress_message, '; stopping…$', ''), 'Cancelled on request'),
                  progress_message = 'Cancelled', updated_at = now()
  WHERE id = NEW.id AND status = 'running' AND waiting_since IS NOT NULL;
  RETURN NULL;
END $$;

CREATE TRIGGER "jobs_cancel_waiting" AFTER UPDATE OF "cancel_requested_at" ON "jobs"
  FOR EACH ROW WHEN (NEW.cancel_requested_at IS NOT NULL AND OLD.cancel_requested_at IS NULL AND NEW.waiting_since IS NOT NULL)
  EXECUTE FUNCTION "conveyor_cancel_waiting"();
