-- Pipelines and imports.
--
-- * A waiting parent's progress is the sum of its children's (export parts; now also brought up
--   to date by the last child's end, which the progress throttle could leave behind) unless it says
--   otherwise: a pipeline (lib/jobs/pipeline.ts) keeps its own, "stage 2 of 5", and each stage
--   child shows its own.
-- * A parent woken by its last child's end is announced to its queue's admitters (NOTIFY
--   conveyor_admit) instead of waiting for their next sweep (up to ADMISSION_SWEEP_MS).
-- * imports: one row per import (its first job's id), what its stages found and did. The
--   commit stage records committed_at in the transaction that moves the rows, so a retried
--   commit never moves them twice.
-- * customers.email is unique within a tenant: imports upsert customers by it.

ALTER TABLE "jobs" ADD COLUMN "rollup_progress" BOOLEAN NOT NULL DEFAULT true;

CREATE OR REPLACE FUNCTION "conveyor_child_changed"() RETURNS trigger LANGUAGE plpgsql AS $$
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
END $$;

CREATE TABLE "imports" (
    "id" UUID NOT NULL,
    "job_id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "upload_id" TEXT NOT NULL,
    "dataset" TEXT NOT NULL,
    "format" TEXT NOT NULL,
    "mode" TEXT NOT NULL,
    "staging_table" TEXT,
    "rows_read" BIGINT,
    "rejected" BIGINT,
    "inserted" BIGINT,
    "updated" BIGINT,
    "bad_rows" JSONB NOT NULL DEFAULT '[]',
    "files" JSONB NOT NULL DEFAULT '[]',
    "committed_at" TIMESTAMPTZ(3),
    "cleaned_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "imports_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "imports_job_id_idx" ON "imports"("job_id");
CREATE INDEX "imports_tenant_id_created_at_idx" ON "imports"("tenant_id", "created_at");
CREATE INDEX "imports_open_cleanup_idx" ON "imports"("created_at") WHERE "cleaned_at" IS NULL;
ALTER TABLE "imports" ADD CONSTRAINT "imports_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "imports" ADD CONSTRAINT "imports_job_id_fkey" FOREIGN KEY ("job_id") REFERENCES "jobs"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- The load stage's tables (one unlogged table per import), out of the way of ours.
CREATE SCHEMA IF NOT EXISTS "import_staging";

CREATE UNIQUE INDEX "customers_tenant_id_email_key" ON "customers"("tenant_id", "email");
