-- Schedules: delayed and recurring work. A schedule is a definition (cron in an
-- IANA zone, a task type and its input, policies); each of its runs is an
-- ordinary job carrying schedule_id and scheduled_for, unique per occurrence,
-- so however many schedulers race, an occurrence becomes at most one job.

CREATE TABLE "schedules" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "cron" TEXT NOT NULL,
    "timezone" TEXT NOT NULL DEFAULT 'UTC',
    "task" TEXT NOT NULL,
    "input" JSONB NOT NULL,
    "missed_run_policy" TEXT NOT NULL DEFAULT 'once',
    "overlap_policy" TEXT NOT NULL DEFAULT 'skip',
    "catchup_window_seconds" INTEGER NOT NULL DEFAULT 86400,
    "max_catchup" INTEGER NOT NULL DEFAULT 100,
    "start_at" TIMESTAMPTZ(3),
    "end_at" TIMESTAMPTZ(3),
    "paused" BOOLEAN NOT NULL DEFAULT false,
    "paused_at" TIMESTAMPTZ(3),
    -- The next occurrence not yet handled (NULL: none left before end_at).
    "next_run_at" TIMESTAMPTZ(3),
    -- The latest occurrence handled (run, skipped or missed): where the next search starts.
    "last_occurrence_at" TIMESTAMPTZ(3),
    -- An occurrence held back by buffer_one until the open run ends.
    "buffered_for" TIMESTAMPTZ(3),
    "missed_count" INTEGER NOT NULL DEFAULT 0,
    "overlap_skipped_count" INTEGER NOT NULL DEFAULT 0,
    "created_by_id" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "schedules_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "schedules_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE,
    CONSTRAINT "schedules_created_by_id_fkey" FOREIGN KEY ("created_by_id") REFERENCES "users"("id") ON DELETE SET NULL ON UPDATE CASCADE,
    CONSTRAINT "schedules_missed_run_policy_check" CHECK ("missed_run_policy" IN ('skip', 'once', 'all')),
    CONSTRAINT "schedules_overlap_policy_check" CHECK ("overlap_policy" IN ('skip', 'buffer_one', 'allow', 'cancel_other')),
    CONSTRAINT "schedules_catchup_check" CHECK ("catchup_window_seconds" >= 0 AND "max_catchup" BETWEEN 1 AND 1000),
    CONSTRAINT "schedules_window_check" CHECK ("end_at" IS NULL OR "start_at" IS NULL OR "end_at" > "start_at")
);
CREATE UNIQUE INDEX "schedules_tenant_id_name_key" ON "schedules"("tenant_id", "name");
-- The scheduler's question: which schedules are due (or hold a buffered run)?
CREATE INDEX "schedules_due_idx" ON "schedules"("next_run_at") WHERE NOT "paused" AND "next_run_at" IS NOT NULL;
CREATE INDEX "schedules_buffered_idx" ON "schedules"("buffered_for") WHERE "buffered_for" IS NOT NULL;

-- What happened to occurrences that did not become a run (missed while no
-- scheduler ran, skipped for an overlap, buffered) and runs cancelled by a newer one.
CREATE TABLE "schedule_events" (
    "id" BIGSERIAL NOT NULL,
    "schedule_id" UUID NOT NULL,
    "kind" TEXT NOT NULL,
    "scheduled_for" TIMESTAMPTZ(3) NOT NULL,
    "job_id" UUID,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "schedule_events_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "schedule_events_schedule_id_fkey" FOREIGN KEY ("schedule_id") REFERENCES "schedules"("id") ON DELETE CASCADE ON UPDATE CASCADE,
    CONSTRAINT "schedule_events_kind_check" CHECK ("kind" IN ('missed', 'overlap_skipped', 'buffered', 'cancelled_other'))
);
CREATE INDEX "schedule_events_schedule_id_idx" ON "schedule_events"("schedule_id", "id");

ALTER TABLE "jobs" ADD COLUMN "schedule_id" UUID,
  ADD COLUMN "scheduled_for" TIMESTAMPTZ(3),
  ADD CONSTRAINT "jobs_schedule_id_fkey" FOREIGN KEY ("schedule_id") REFERENCES "schedules"("id") ON DELETE SET NULL ON UPDATE CASCADE;
-- Exactly once per occurrence, whatever races.
CREATE UNIQUE INDEX "jobs_schedule_id_scheduled_for_key" ON "jobs"("schedule_id", "scheduled_for");
-- Delayed jobs waiting for their time (status 'scheduled'): the scheduler's other question.
CREATE INDEX "jobs_scheduled_run_at_idx" ON "jobs"("run_at") WHERE "status" = 'scheduled';
-- A schedule's open runs, for its overlap rule.
CREATE INDEX "jobs_schedule_open_idx" ON "jobs"("schedule_id")
  WHERE "schedule_id" IS NOT NULL AND "status" IN ('scheduled', 'queued', 'running', 'retrying');

-- A delayed job wakes the schedulers, which sleep until the next thing due.
CREATE FUNCTION "conveyor_scheduler_wake"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('conveyor_schedules', '');
  RETURN NULL;
END $$;
CREATE TRIGGER "jobs_scheduled_wake" AFTER INSERT ON "jobs"
  FOR EACH ROW WHEN (NEW.status = 'scheduled') EXECUTE FUNCTION "conveyor_scheduler_wake"();
