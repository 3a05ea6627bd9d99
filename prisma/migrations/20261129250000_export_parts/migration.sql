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
CREATE FUNCTION "conveyor_child_changed"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  p record;
  agg record;
BEGIN
  SELECT id, waiting_since, progress_done, progress_total INTO p
  FROM jobs WHERE id = NEW.parent_id FOR UPDATE;
  IF p.id IS NULL OR p.waiting_since IS NULL THEN
    RETURN NULL;
  END IF;
  SELECT count(*) AS parts,
         count(*) FILTER (WHERE status = 'succeeded') AS done,
         count(*) FILTER (WHERE status NOT IN ('succeeded', 'failed', 'cancelled', 'expired')) AS open,
         coalesce(sum(progress_done), 0) AS rows_done,
         coalesce(sum(greatest(coalesce(progress_total, 0), progress_done)), 0) AS rows_total
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
                    progress_message = format('%s of %s parts done', agg.done, agg.parts),
                    updated_at = now()
    WHERE id = p.id;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER "jobs_child_changed" AFTER UPDATE OF "status", "progress_done" ON "jobs"
  FOR EACH ROW WHEN (NEW.parent_id IS NOT NULL AND (NEW.status IS DISTINCT FROM OLD.status OR NEW.progress_done IS DISTINCT FROM OLD.progress_done))
  EXECUTE FUNCTION "conveyor_child_changed"();

CREATE INDEX "jobs_waiting_parents_idx" ON "jobs" ("waiting_since") WHERE "waiting_since" IS NOT NULL;
