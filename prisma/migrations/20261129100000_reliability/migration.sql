-- AlterTable
ALTER TABLE "jobs" ADD COLUMN     "discarded_at" TIMESTAMPTZ(3),
ADD COLUMN     "replay_of_id" UUID;

-- CreateTable
CREATE TABLE "workers" (
    "id" TEXT NOT NULL,
    "host" TEXT NOT NULL,
    "pid" INTEGER NOT NULL,
    "version" TEXT NOT NULL,
    "queues" TEXT[],
    "concurrency" INTEGER NOT NULL,
    "graphile_worker_ids" TEXT[],
    "state" TEXT NOT NULL DEFAULT 'running',
    "started_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "heartbeat_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "stopped_at" TIMESTAMPTZ(3),

    CONSTRAINT "workers_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "workers_state_heartbeat_at_idx" ON "workers"("state", "heartbeat_at");

-- CreateIndex
CREATE INDEX "jobs_replay_of_id_idx" ON "jobs"("replay_of_id");

-- CreateIndex
CREATE INDEX "jobs_status_lease_expires_at_idx" ON "jobs"("status", "lease_expires_at");

-- AddForeignKey
ALTER TABLE "jobs" ADD CONSTRAINT "jobs_replay_of_id_fkey" FOREIGN KEY ("replay_of_id") REFERENCES "jobs"("id") ON DELETE SET NULL ON UPDATE CASCADE;


-- ─── Monotonic lifecycle, enforced where every writer must pass: a status
-- only moves forward. Allowed transitions:
--   scheduled → queued | cancelled
--   queued    → running | cancelled | failed
--   running   → succeeded | failed | cancelled | retrying
--   retrying  → queued | running | cancelled | failed
--   succeeded → expired
-- failed, cancelled and expired are final (a replay is a new job).
CREATE FUNCTION "conveyor_job_guard_status"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.status = OLD.status THEN
    RETURN NEW;
  END IF;
  IF (OLD.status, NEW.status) IN (
    ('scheduled', 'queued'), ('scheduled', 'cancelled'),
    ('queued', 'running'), ('queued', 'cancelled'), ('queued', 'failed'),
    ('running', 'succeeded'), ('running', 'failed'), ('running', 'cancelled'), ('running', 'retrying'),
    ('retrying', 'queued'), ('retrying', 'running'), ('retrying', 'cancelled'), ('retrying', 'failed'),
    ('succeeded', 'expired')
  ) THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'job % cannot move from % to %', OLD.id, OLD.status, NEW.status
    USING ERRCODE = 'check_violation';
END $$;

CREATE TRIGGER "jobs_guard_status" BEFORE UPDATE OF "status" ON "jobs"
  FOR EACH ROW EXECUTE FUNCTION "conveyor_job_guard_status"();

-- ─── A cancel request is a visible change too: it bumps seq and is announced,
-- so the worker running the job (subscribed through its LISTEN connection)
-- aborts the attempt at once.
CREATE OR REPLACE FUNCTION "conveyor_job_bump_seq"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF (NEW.status, NEW.progress_done, NEW.progress_total, NEW.progress_stage, NEW.progress_message, NEW.attempts, NEW.result::text, NEW.error_message, NEW.cancel_requested_at)
     IS DISTINCT FROM
     (OLD.status, OLD.progress_done, OLD.progress_total, OLD.progress_stage, OLD.progress_message, OLD.attempts, OLD.result::text, OLD.error_message, OLD.cancel_requested_at) THEN
    NEW.seq := OLD.seq + 1;
  END IF;
  RETURN NEW;
END $$;

CREATE OR REPLACE FUNCTION "conveyor_job_notify"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' OR NEW.seq IS DISTINCT FROM OLD.seq THEN
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
      'cancelRequested', NEW.cancel_requested_at IS NOT NULL,
      'at', to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
    )::text);
  END IF;
  RETURN NULL;
END $$;

-- ─── Every status change, kept: the job's timeline, and the evidence that
-- no status ever moved backwards.
CREATE TABLE "job_transitions" (
    "id" BIGSERIAL PRIMARY KEY,
    "job_id" UUID NOT NULL,
    "from_status" "job_status",
    "to_status" "job_status" NOT NULL,
    "attempt" INTEGER NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT "job_transitions_job_id_fkey" FOREIGN KEY ("job_id") REFERENCES "jobs"("id") ON DELETE CASCADE ON UPDATE CASCADE
);
CREATE INDEX "job_transitions_job_id_id_idx" ON "job_transitions"("job_id", "id");

CREATE FUNCTION "conveyor_job_record_transition"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO job_transitions (job_id, from_status, to_status, attempt) VALUES (NEW.id, NULL, NEW.status, NEW.attempts);
  ELSIF NEW.status IS DISTINCT FROM OLD.status THEN
    INSERT INTO job_transitions (job_id, from_status, to_status, attempt) VALUES (NEW.id, OLD.status, NEW.status, NEW.attempts);
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER "jobs_record_transition" AFTER INSERT OR UPDATE OF "status" ON "jobs"
  FOR EACH ROW EXECUTE FUNCTION "conveyor_job_record_transition"();

-- ─── The probe task's side effects (npm run chaos, bench:throughput): one row
-- per job however often it runs, and how often it ran.
CREATE TABLE "probe_effects" (
    "job_id" UUID PRIMARY KEY,
    "executions" INTEGER NOT NULL DEFAULT 1,
    "first_at" TIMESTAMPTZ(3) NOT NULL DEFAULT clock_timestamp(),
    "last_at" TIMESTAMPTZ(3) NOT NULL DEFAULT clock_timestamp()
);
