-- AlterTable
ALTER TABLE "jobs" ADD COLUMN     "admitted_at" TIMESTAMPTZ(3);

-- CreateTable
CREATE TABLE "queues" (
    "name" TEXT NOT NULL,
    "tenant_cap" INTEGER NOT NULL,
    "max_admitted" INTEGER NOT NULL,
    "vclock" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "saturated" BOOLEAN NOT NULL DEFAULT false,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "queues_pkey" PRIMARY KEY ("name")
);

-- CreateTable
CREATE TABLE "tenant_queue_limits" (
    "tenant_id" UUID NOT NULL,
    "queue" TEXT NOT NULL,
    "max_running" INTEGER,
    "weight" INTEGER NOT NULL DEFAULT 1,
    "updated_by_id" UUID,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "tenant_queue_limits_pkey" PRIMARY KEY ("tenant_id","queue")
);

-- CreateTable
CREATE TABLE "admission_state" (
    "queue" TEXT NOT NULL,
    "tenant_id" UUID NOT NULL,
    "vtime" DOUBLE PRECISION NOT NULL DEFAULT 0,

    CONSTRAINT "admission_state_pkey" PRIMARY KEY ("queue","tenant_id")
);

-- CreateTable
CREATE TABLE "queue_pauses" (
    "id" UUID NOT NULL,
    "queue" TEXT,
    "type" TEXT,
    "tenant_id" UUID,
    "reason" TEXT,
    "cancel_running" BOOLEAN NOT NULL DEFAULT false,
    "created_by_id" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "resumed_at" TIMESTAMPTZ(3),
    "resumed_by_id" UUID,

    CONSTRAINT "queue_pauses_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "queue_pauses_resumed_at_idx" ON "queue_pauses"("resumed_at");

-- AddForeignKey
ALTER TABLE "tenant_queue_limits" ADD CONSTRAINT "tenant_queue_limits_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "queue_pauses" ADD CONSTRAINT "queue_pauses_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "queue_pauses" ADD CONSTRAINT "queue_pauses_created_by_id_fkey" FOREIGN KEY ("created_by_id") REFERENCES "users"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "queue_pauses" ADD CONSTRAINT "queue_pauses_resumed_by_id_fkey" FOREIGN KEY ("resumed_by_id") REFERENCES "users"("id") ON DELETE SET NULL ON UPDATE CASCADE;


-- ---------------------------------------------------------------------------
-- Admission (lib/admission). A job reaches graphile-worker only once admitted:
-- its scope is not paused, its tenant is under its cap in the queue, the queue's
-- window has room, and it is its tenant's turn in a weighted round-robin. The
-- backlog stays in `jobs`, out of graphile's fetch path.
-- ---------------------------------------------------------------------------

-- The defaults; every worker writes the configured values at start.
INSERT INTO "queues" ("name", "tenant_cap", "max_admitted") VALUES ('interactive', 4, 32), ('bulk', 8, 64);

-- Waiting jobs, per queue, tenant and type in the order they run: admission's fetch path.
CREATE INDEX "jobs_waiting_idx" ON "jobs" ("queue", "tenant_id", "type", "priority", "run_at", "id")
  WHERE "status" IN ('queued', 'retrying') AND "admitted_at" IS NULL;
-- Jobs holding a slot (admitted or running): what caps and windows count.
CREATE INDEX "jobs_admitted_idx" ON "jobs" ("queue", "tenant_id")
  WHERE "admitted_at" IS NOT NULL AND "status" IN ('queued', 'retrying', 'running');
-- Waiting jobs with a cancel request: the reaper ends the unadmitted ones (tiny).
CREATE INDEX "jobs_cancel_waiting_idx" ON "jobs" ("id")
  WHERE "status" IN ('queued', 'retrying') AND "cancel_requested_at" IS NOT NULL;
-- One active pause per scope.
CREATE UNIQUE INDEX "queue_pauses_active_scope_key" ON "queue_pauses"
  (coalesce("queue", ''), coalesce("type", ''), coalesce("tenant_id", '00000000-0000-0000-0000-000000000000'))
  WHERE "resumed_at" IS NULL;

-- Is work of this scope paused? A NULL type or tenant asks about all of them:
-- it matches only pauses that leave that field open.
CREATE FUNCTION "conveyor_paused"(p_queue text, p_type text, p_tenant uuid) RETURNS boolean
LANGUAGE sql STABLE AS $$
  SELECT EXISTS (
    SELECT 1 FROM queue_pauses p
    WHERE p.resumed_at IS NULL
      AND (p.queue IS NULL OR p.queue = p_queue)
      AND (p.type IS NULL OR p.type = p_type)
      AND (p.tenant_id IS NULL OR p.tenant_id = p_tenant))
$$;

-- graphile-worker's task identifier of a job: one task per queue and type, so a
-- worker process serves the queues it was started for.
-- (plpgsql: its body is resolved at call time, and graphile's schema is installed after ours.)
CREATE FUNCTION "conveyor_dispatch"(p_id uuid, p_queue text, p_type text, p_priority int) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  -- max_attempts: graphile retries a dispatch only when the task itself throws
  -- (the database was unreachable before our claim); a handler's failure never reaches it.
  PERFORM graphile_worker.add_job(p_queue || ':' || p_type, json_build_object('jobId', p_id::text),
    run_at => now(), max_attempts => 5, job_key => p_id::text, priority => p_priority);
END $$;

-- Admits waiting jobs of one queue, at most p_max; returns how many, or -1 when
-- another admission of the queue holds its lock (the caller retries shortly,
-- rather than holding a connection in a queue of waiters). Serialized per queue
-- by that advisory lock, so caps hold across every worker process.
CREATE FUNCTION "conveyor_admit"(p_queue text, p_max integer DEFAULT 500) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  v_q queues%ROWTYPE;
  v_room integer;
  v_tenants uuid[];
  v_free integer[];
  v_vtime float8[];
  v_weight float8[];
  v_active boolean[];
  v_best integer;
  v_job record;
  v_n integer := 0;
  v_clock float8;
  v_left boolean := false;
BEGIN
  IF NOT pg_try_advisory_xact_lock(hashtext('conveyor_admit'), hashtext(p_queue)) THEN RETURN -1; END IF;
  SELECT * INTO v_q FROM queues WHERE name = p_queue;
  IF NOT FOUND OR conveyor_paused(p_queue, NULL, NULL) THEN RETURN 0; END IF;
  SELECT v_q.max_admitted - count(*) INTO v_room FROM (
    SELECT 1 FROM jobs
     WHERE queue = p_queue AND admitted_at IS NOT NULL AND status IN ('queued', 'retrying', 'running')
     LIMIT v_q.max_admitted) s;
  v_room := least(v_room, p_max);
  v_clock := v_q.vclock;

  -- Tenants with waiting work (a skip scan over jobs_waiting_idx: one probe per
  -- tenant, whatever the backlog), not paused, with free slots.
  WITH RECURSIVE w AS (
    (SELECT tenant_id FROM jobs
      WHERE queue = p_queue AND status IN ('queued', 'retrying') AND admitted_at IS NULL
      ORDER BY tenant_id LIMIT 1)
    UNION ALL
    SELECT (SELECT j.tenant_id FROM jobs j
             WHERE j.queue = p_queue AND j.status IN ('queued', 'retrying') AND j.admitted_at IS NULL
               AND j.tenant_id > w.tenant_id
             ORDER BY j.tenant_id LIMIT 1)
    FROM w WHERE w.tenant_id IS NOT NULL
  ), cand AS (
    SELECT w.tenant_id,
           coalesce(l.max_running, v_q.tenant_cap) - (
             SELECT count(*) FROM jobs o
              WHERE o.queue = p_queue AND o.tenant_id = w.tenant_id
                AND o.admitted_at IS NOT NULL AND o.status IN ('queued', 'retrying', 'running'))::int AS free,
           -- A tenant back from idle starts at the clock: no credit saved up while away.
           greatest(coalesce(s.vtime, 0), v_clock) AS vtime,
           coalesce(l.weight, 1)::float8 AS weight
    FROM w
    LEFT JOIN tenant_queue_limits l ON l.tenant_id = w.tenant_id AND l.queue = p_queue
    LEFT JOIN admission_state s ON s.tenant_id = w.tenant_id AND s.queue = p_queue
    WHERE w.tenant_id IS NOT NULL AND NOT conveyor_paused(p_queue, NULL, w.tenant_id)
  )
  SELECT array_agg(tenant_id ORDER BY vtime, tenant_id), array_agg(free ORDER BY vtime, tenant_id),
         array_agg(vtime ORDER BY vtime, tenant_id), array_agg(weight ORDER BY vtime, tenant_id)
    INTO v_tenants, v_free, v_vtime, v_weight
    FROM cand WHERE free > 0;
  IF v_tenants IS NULL THEN
    UPDATE queues SET saturated = false WHERE name = p_queue AND saturated;
    RETURN 0;
  END IF;
  v_active := array_fill(true, ARRAY[array_length(v_tenants, 1)]);

  LOOP
    -- The tenant with the earliest virtual start time (weighted round-robin).
    v_best := NULL;
    FOR i IN 1 .. array_length(v_tenants, 1) LOOP
      IF v_active[i] AND v_free[i] > 0 AND (v_best IS NULL OR v_vtime[i] < v_vtime[v_best]) THEN
        v_best := i;
      END IF;
    END LOOP;
    EXIT WHEN v_best IS NULL;
    IF v_n >= v_room THEN v_left := true; EXIT; END IF;

    -- Its next due job in order (priority, then run_at, then id), over the types
    -- not paused for it: one probe per type, so a paused type's backlog is never scanned.
    SELECT j.id, j.type, j.priority INTO v_job
      FROM (WITH RECURSIVE t AS (
              (SELECT type FROM jobs
                WHERE queue = p_queue AND tenant_id = v_tenants[v_best]
                  AND status IN ('queued', 'retrying') AND admitted_at IS NULL
                ORDER BY type LIMIT 1)
              UNION ALL
              SELECT (SELECT j2.type FROM jobs j2
                       WHERE j2.queue = p_queue AND j2.tenant_id = v_tenants[v_best]
                         AND j2.status IN ('queued', 'retrying') AND j2.admitted_at IS NULL AND j2.type > t.type
                       ORDER BY j2.type LIMIT 1)
              FROM t WHERE t.type IS NOT NULL)
            SELECT type FROM t WHERE type IS NOT NULL AND NOT conveyor_paused(p_queue, type, v_tenants[v_best])) ty,
           LATERAL (SELECT id, type, priority, run_at FROM jobs
                     WHERE queue = p_queue AND tenant_id = v_tenants[v_best] AND type = ty.type
                       AND status IN ('queued', 'retrying') AND admitted_at IS NULL
                       AND run_at <= now() AND cancel_requested_at IS NULL
                     ORDER BY priority, run_at, id LIMIT 1) j
     ORDER BY j.priority, j.run_at, j.id
     LIMIT 1;
    IF NOT FOUND THEN
      v_active[v_best] := false;  -- nothing due, or all its types paused
      CONTINUE;
    END IF;

    UPDATE jobs SET admitted_at = now()
     WHERE id = v_job.id AND status IN ('queued', 'retrying') AND admitted_at IS NULL;
    IF FOUND THEN
      PERFORM conveyor_dispatch(v_job.id, p_queue, v_job.type, v_job.priority);
      v_n := v_n + 1;
      v_free[v_best] := v_free[v_best] - 1;
    END IF;
    v_clock := v_vtime[v_best];
    v_vtime[v_best] := v_vtime[v_best] + 1.0 / v_weight[v_best];
  END LOOP;

  IF v_n > 0 THEN
    INSERT INTO admission_state (queue, tenant_id, vtime)
    SELECT p_queue, t, v FROM unnest(v_tenants, v_vtime) AS x(t, v)
    ON CONFLICT (queue, tenant_id) DO UPDATE SET vtime = excluded.vtime;
  END IF;
  IF v_n > 0 OR v_q.saturated IS DISTINCT FROM v_left THEN
    UPDATE queues SET vclock = v_clock, saturated = v_left WHERE name = p_queue;
  END IF;
  RETURN v_n;
END $$;

-- The fast path: a new job that nobody waits ahead of, in a scope with room, is
-- admitted in its own INSERT, with no round trip through an admitter. Otherwise
-- the workers' admitters are told (NOTIFY, delivered at commit).
CREATE FUNCTION "conveyor_job_admit_new"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  v_q queues%ROWTYPE;
  v_cap integer;
BEGIN
  IF NEW.status NOT IN ('queued', 'retrying') OR NEW.admitted_at IS NOT NULL THEN RETURN NEW; END IF;
  -- (run_at has millisecond precision: the default now() may have been rounded up.)
  -- A transaction that inserts many jobs (a bulk replay) opts out with
  -- SET LOCAL conveyor.admit_inline = 'off': the lock would be held until its commit.
  IF NEW.run_at <= now() + interval '1 millisecond' AND NEW.cancel_requested_at IS NULL
     AND coalesce(current_setting('conveyor.admit_inline', true), '') <> 'off'
     AND pg_try_advisory_xact_lock(hashtext('conveyor_admit'), hashtext(NEW.queue)) THEN
    SELECT * INTO v_q FROM queues WHERE name = NEW.queue;
    v_cap := coalesce((SELECT max_running FROM tenant_queue_limits WHERE tenant_id = NEW.tenant_id AND queue = NEW.queue),
                      v_q.tenant_cap);
    IF v_q.name IS NOT NULL AND NOT v_q.saturated
       AND NOT conveyor_paused(NEW.queue, NEW.type, NEW.tenant_id)
       -- Nobody of its tenant and type waits ahead. (A scalar subquery in index order, not
       -- EXISTS: the planner drops ORDER BY/LIMIT from EXISTS and, with one big tenant in
       -- the statistics, would scan the whole table for a small one.)
       AND (SELECT id FROM jobs
             WHERE queue = NEW.queue AND tenant_id = NEW.tenant_id AND type = NEW.type
               AND status IN ('queued', 'retrying') AND admitted_at IS NULL AND run_at <= now()
             ORDER BY priority, run_at, id LIMIT 1) IS NULL
       -- (Counts stop at the limit: the check costs O(limit), never O(backlog).)
       AND (SELECT count(*) FROM (SELECT 1 FROM jobs
             WHERE queue = NEW.queue AND admitted_at IS NOT NULL AND status IN ('queued', 'retrying', 'running')
             LIMIT v_q.max_admitted) s) < v_q.max_admitted
       AND (SELECT count(*) FROM (SELECT 1 FROM jobs
             WHERE queue = NEW.queue AND tenant_id = NEW.tenant_id
               AND admitted_at IS NOT NULL AND status IN ('queued', 'retrying', 'running')
             LIMIT v_cap) s) < v_cap
    THEN
      NEW.admitted_at := now();
      PERFORM conveyor_dispatch(NEW.id, NEW.queue, NEW.type, NEW.priority);
      RETURN NEW;
    END IF;
  END IF;
  PERFORM pg_notify('conveyor_admit', NEW.queue);
  RETURN NEW;
END $$;

CREATE TRIGGER "jobs_admit_new" BEFORE INSERT ON "jobs"
  FOR EACH ROW EXECUTE FUNCTION "conveyor_job_admit_new"();

-- A slot freed (a job ended, went back to wait for a retry, or was held back by
-- a pause): tell the admitters. Notifications are merged per transaction.
CREATE FUNCTION "conveyor_job_slot_freed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('conveyor_admit', NEW.queue);
  RETURN NULL;
END $$;

CREATE TRIGGER "jobs_slot_freed" AFTER UPDATE OF "status", "admitted_at" ON "jobs"
  FOR EACH ROW
  WHEN (OLD."admitted_at" IS NOT NULL AND OLD."status" IN ('queued', 'retrying', 'running')
        AND (NEW."admitted_at" IS NULL OR NEW."status" NOT IN ('queued', 'retrying', 'running')))
  EXECUTE FUNCTION "conveyor_job_slot_freed"();

-- Existing work: running jobs hold their slots; waiting jobs wait for admission,
-- and their old dispatches (task identifier = type) are removed.
UPDATE "jobs" SET "admitted_at" = coalesce("started_at", now()) WHERE "status" = 'running';
DO $$
BEGIN
  IF to_regprocedure('graphile_worker.remove_job(text)') IS NOT NULL THEN
    PERFORM graphile_worker.remove_job(id::text) FROM jobs WHERE status IN ('queued', 'retrying');
  END IF;
END $$;

-- Admission is visible: being admitted or taken back bumps the job's seq, and
-- its event says where a waiting job stands (admitted, waiting its turn, paused).
CREATE OR REPLACE FUNCTION "conveyor_job_bump_seq"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF (NEW.status, NEW.progress_done, NEW.progress_total, NEW.progress_stage, NEW.progress_message, NEW.attempts, NEW.result::text, NEW.error_message, NEW.cancel_requested_at, NEW.admitted_at IS NULL)
     IS DISTINCT FROM
     (OLD.status, OLD.progress_done, OLD.progress_total, OLD.progress_stage, OLD.progress_message, OLD.attempts, OLD.result::text, OLD.error_message, OLD.cancel_requested_at, OLD.admitted_at IS NULL) THEN
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
      'admission', CASE WHEN NEW.status NOT IN ('queued', 'retrying') THEN NULL
                        WHEN NEW.admitted_at IS NOT NULL THEN 'admitted'
                        WHEN conveyor_paused(NEW.queue, NEW.type, NEW.tenant_id) THEN 'paused'
                        ELSE 'waiting' END,
      'at', to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
    )::text);
  END IF;
  RETURN NULL;
END $$;
