-- Schedules keep their runs in their own table (issue 33): `jobs` carries no workload's columns.
-- A run is a job and the occurrence it runs; UNIQUE (schedule_id, scheduled_for) keeps each
-- occurrence to at most one run however many schedulers race (it was jobs' unique index).
-- The job's FK is checked at commit, so one statement can insert the run and then its job.
-- A schedule's deletion keeps its runs' jobs and their occurrence, as before (schedule_id NULL).

CREATE TABLE "schedule_runs" (
    "job_id" UUID NOT NULL,
    "schedule_id" UUID,
    "scheduled_for" TIMESTAMPTZ(3) NOT NULL,
    CONSTRAINT "schedule_runs_pkey" PRIMARY KEY ("job_id"),
    CONSTRAINT "schedule_runs_job_id_fkey" FOREIGN KEY ("job_id") REFERENCES "jobs"("id")
      ON DELETE CASCADE ON UPDATE CASCADE DEFERRABLE INITIALLY DEFERRED,
    CONSTRAINT "schedule_runs_schedule_id_fkey" FOREIGN KEY ("schedule_id") REFERENCES "schedules"("id")
      ON DELETE SET NULL ON UPDATE CASCADE
);
CREATE UNIQUE INDEX "schedule_runs_schedule_id_scheduled_for_key" ON "schedule_runs"("schedule_id", "scheduled_for");

INSERT INTO "schedule_runs" ("job_id", "schedule_id", "scheduled_for")
SELECT "id", "schedule_id", "scheduled_for" FROM "jobs" WHERE "scheduled_for" IS NOT NULL;

-- Drops jobs_schedule_id_scheduled_for_key, jobs_schedule_open_idx and jobs_schedule_id_fkey with them.
-- (jobs_scheduled_run_at_idx and jobs_scheduled_wake stay: they serve delayed jobs, status 'scheduled'.)
ALTER TABLE "jobs" DROP COLUMN "schedule_id", DROP COLUMN "scheduled_for";
