-- The engine's state as data, not prose.
--  * A cancel request says who asked and why (columns), instead of a progress
--    message ending in "stopping…" that the UI searched for and SQL stripped.
--  * A parent waiting for its children carries counts (children total, done,
--    failed) and bytes; the UI makes "3 of 5 parts done · 20 MB" from them.
--  * Waking a parent to gather its children resumes the same attempt (a new
--    `resume` of it) instead of spending an attempt from an inflated budget, so
--    an export that never failed shows "attempt 1 of 3".
--  * Children keep their place in the fan-out (`child_index`).

ALTER TABLE "jobs"
  ADD COLUMN "cancel_requested_by_id" UUID,
  ADD COLUMN "cancel_reason" TEXT,
  ADD COLUMN "children_total" INTEGER,
  ADD COLUMN "children_done" INTEGER,
  ADD COLUMN "children_failed" INTEGER,
  ADD COLUMN "progress_bytes" BIGINT,
  ADD COLUMN "child_index" INTEGER,
  ADD COLUMN "resume_pending" BOOLEAN NOT NULL DEFAULT false,
  ADD COLUMN "resumes" INTEGER NOT NULL DEFAULT 0;

ALTER TABLE "jobs" ADD CONSTRAINT "jobs_cancel_requested_by_id_fkey" FOREIGN KEY ("cancel_requested_by_id")
  REFERENCES "users"("id") ON DELETE SET NULL ON UPDATE CASCADE;

ALTER TABLE "job_attempts" ADD COLUMN "resume" INTEGER NOT NULL DEFAULT 0;
DROP INDEX "job_attempts_job_id_attempt_key";
CREATE UNIQUE INDEX "job_attempts_job_id_attempt_resume_key" ON "job_attempts"("job_id", "attempt", "resume");

-- Existing parents: the counts from their children, and waiting ones give back
-- the attempt the old wake-up scheme added to their budget (they now resume).
UPDATE "jobs" p SET "children_total" = c.total, "children_done" = c.done, "children_failed" = c.failed
FROM (SELECT parent_id, count(*)::int AS total,
             count(*) FILTER (WHERE status = 'succeeded')::int AS done,
             count(*) FILTER (WHERE status IN ('failed', 'cancelled'))::int AS failed
      FROM jobs WHERE parent_id IS NOT NULL GROUP BY parent_id) c
WHERE p.id = c.parent_id;
UPDATE "jobs" SET "max_attempts" = greatest("attempts", "max_attempts" - 1), "resume_pending" = true
WHERE "waiting_since" IS NOT NULL;
UPDATE "jobs" SET "child_index" = ("input"->>'part')::int - 1
WHERE "parent_id" IS NOT NULL AND "input" ? 'part' AND jsonb_typeof("input"->'part') = 'number';

-- A child's change rolls into its waiting parent: counts, rows and bytes; the
-- last child to end wakes the parent to resume its attempt. No display text:
-- the application makes that. (Lock order as before: child, then parent.)
CREATE OR REPLACE FUNCTION "conveyor_child_changed"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  p record;
  agg record;
BEGIN
  IF NEW.status IS DISTINCT FROM OLD.status THEN
    SELECT id, waiting_since, updated_at INTO p FROM jobs WHERE id = NEW.parent_id FOR UPDATE;
  ELSE
    -- Progress only: skip when the parent is busy (another child's write, a cancel) or was
    -- updated in the last 250 ms; the next write or the child's end brings it up to date.
    -- This also throttles the parent's NOTIFYs however many children run.
    SELECT id, waiting_since, updated_at INTO p FROM jobs WHERE id = NEW.parent_id FOR UPDATE SKIP LOCKED;
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
    UPDATE jobs SET status = 'retrying', waiting_since = NULL, admitted_at = NULL, run_at = now(),
                    resume_pending = true,
                    children_total = agg.total, children_done = agg.done, children_failed = agg.failed,
                    progress_bytes = agg.bytes, updated_at = now()
    WHERE id = p.id;
  ELSE
    UPDATE jobs SET progress_done = greatest(progress_done, agg.rows_done),
                    progress_total = greatest(coalesce(progress_total, 0), agg.rows_total, agg.rows_done),
                    children_total = agg.total, children_done = agg.done, children_failed = agg.failed,
                    progress_bytes = agg.bytes, updated_at = now()
    WHERE id = p.id;
  END IF;
  RETURN NULL;
END $$;

-- A cancel request on a parent waiting for its children ends it at once (it runs
-- on no worker); its waiting attempt is closed as cancelled. The reaper then
-- stops the children.
CREATE OR REPLACE FUNCTION "conveyor_cancel_waiting"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE jobs SET status = 'cancelled', waiting_since = NULL, resume_pending = false, finished_at = now(),
                  error_class = 'cancelled', error_message = coalesce(NEW.cancel_reason, 'Cancelled on request'),
                  updated_at = now()
  WHERE id = NEW.id AND status = 'running' AND waiting_since IS NOT NULL;
  UPDATE job_attempts SET outcome = 'cancelled'
  WHERE job_id = NEW.id AND outcome = 'waiting' AND attempt = NEW.attempts;
  RETURN NULL;
END $$;

-- Every visible change bumps seq (the SSE event id); the new columns are visible.
CREATE OR REPLACE FUNCTION "conveyor_job_bump_seq"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF (NEW.status, NEW.progress_done, NEW.progress_total, NEW.progress_stage, NEW.progress_message, NEW.attempts,
      NEW.result::text, NEW.error_message, NEW.cancel_requested_at, NEW.admitted_at IS NULL,
      NEW.children_total, NEW.children_done, NEW.children_failed, NEW.progress_bytes)
     IS DISTINCT FROM
     (OLD.status, OLD.progress_done, OLD.progress_total, OLD.progress_stage, OLD.progress_message, OLD.attempts,
      OLD.result::text, OLD.error_message, OLD.cancel_requested_at, OLD.admitted_at IS NULL,
      OLD.children_total, OLD.children_done, OLD.children_failed, OLD.progress_bytes) THEN
    NEW.seq := OLD.seq + 1;
  END IF;
  RETURN NEW;
END $$;

-- The event: values only (lib/events/payload.ts parses it with a schema).
CREATE OR REPLACE FUNCTION "conveyor_job_notify"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' OR NEW.seq IS DISTINCT FROM OLD.seq THEN
    -- Keep the payload far below NOTIFY's 8000-byte limit.
    PERFORM pg_notify('conveyor_job_events', json_build_object(
      'tenantId', NEW.tenant_id,
      'jobId', NEW.id,
      'seq', NEW.seq,
      'type', NEW.type,
      'status', NEW.status,
      'attempts', NEW.attempts,
      'done', NEW.progress_done,
      'total', NEW.progress_total,
      'unit', NEW.progress_unit,
      'stage', NEW.progress_stage,
      'message', left(NEW.progress_message, 300),
      'bytes', NEW.progress_bytes,
      'children', CASE WHEN NEW.children_total IS NULL THEN NULL
                       ELSE json_build_object('total', NEW.children_total, 'done', NEW.children_done,
                                              'failed', NEW.children_failed) END,
      'cancelRequested', NEW.cancel_requested_at IS NOT NULL,
      'admission', CASE WHEN NEW.status NOT IN ('queued', 'retrying') THEN NULL
                        WHEN NEW.admitted_at IS NOT NULL THEN 'admitted'
                        WHEN conveyor_paused(NEW.queue, NEW.type, NEW.tenant_id) THEN 'paused'
                        ELSE 'waiting' END,
      'at', to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
    )::text);
  END IF;
  RETURN NULL;
END $$;
