-- A create's work in Postgres, made cheaper (issue 15). Measured on a scratch database with
-- pgbench, one client inserting 20 queued exports per statement as a batch of creates does, into a
-- paused tenant: 159 statements a second before these two changes and the gate's (lib/jobs/enqueue.ts,
-- evaluated once per user in a batch), 387-388 after.
--
-- 1. The admission trigger asks first whether a pause holds the job, and then returns at once:
--    nothing is admitted and nobody is woken. Every create into a pause notified `conveyor_admit`,
--    and every worker's admitter then ran `conveyor_admit`, found the job paused and admitted
--    nothing (in bench:api's 20-client creates, 0.28 ms of worker CPU per create). Resuming a pause
--    admits its queues at once (resumePause); the admitters' sweep covers a pause resumed while the
--    create's transaction was still open, as it covers a lost notification. The admission checks
--    that query `jobs` are nested below the cheap ones: as one expression, each evaluation set up
--    all three subqueries even when the first check failed (80 µs a row for a paused create).
--
-- 2. A new job's notification and its first timeline row are written once per statement, from its
--    new rows (a transition table), instead of by a row trigger each: a trigger call per row and
--    per trigger was most of their cost for a batch. Updates keep their row triggers.

CREATE OR REPLACE FUNCTION public.conveyor_job_admit_new()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_q queues%ROWTYPE;
  v_cap integer;
BEGIN
  IF NEW.status NOT IN ('queued', 'retrying') OR NEW.admitted_at IS NOT NULL THEN RETURN NEW; END IF;
  -- Held by a pause: nothing to admit and nobody to wake (resuming the pause admits it).
  IF conveyor_paused(NEW.queue, NEW.type, NEW.tenant_id) THEN RETURN NEW; END IF;
  -- (run_at has millisecond precision: the default now() may have been rounded up.)
  -- A transaction that inserts many jobs (a bulk replay) opts out with
  -- SET LOCAL conveyor.admit_inline = 'off': the lock would be held until its commit.
  IF NEW.run_at <= now() + interval '1 millisecond' AND NEW.cancel_requested_at IS NULL
     AND coalesce(current_setting('conveyor.admit_inline', true), '') <> 'off'
     AND pg_try_advisory_xact_lock(hashtext('conveyor_admit'), hashtext(NEW.queue)) THEN
    SELECT * INTO v_q FROM queues WHERE name = NEW.queue;
    IF v_q.name IS NOT NULL AND NOT v_q.saturated THEN
      v_cap := coalesce((SELECT max_running FROM tenant_queue_limits
                          WHERE tenant_id = NEW.tenant_id AND queue = NEW.queue), v_q.tenant_cap);
      -- Nobody of its tenant and type waits ahead. (A scalar subquery in index order, not
      -- EXISTS: the planner drops ORDER BY/LIMIT from EXISTS and, with one big tenant in
      -- the statistics, would scan the whole table for a small one.)
      IF (SELECT id FROM jobs
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
  END IF;
  PERFORM pg_notify('conveyor_admit', NEW.queue);
  RETURN NEW;
END $function$;

-- A job's notification (lib/events/payload.ts), written twice: here for an update, in
-- conveyor_jobs_inserted for a statement's new jobs (a test compares the two). Not one SQL function
-- taking the row: passing a whole jobs row to a function cost a fifth of a batch's time.
-- Keep the payload far below NOTIFY's 8000-byte limit. tenantId and jobId come first: a listener
-- drops the events of jobs it does not follow from the payload's head (lib/events/hub.ts).
CREATE OR REPLACE FUNCTION public.conveyor_job_notify()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  IF NEW.seq IS DISTINCT FROM OLD.seq THEN
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
END $function$;

CREATE OR REPLACE FUNCTION public.conveyor_job_record_transition()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  IF NEW.status IS DISTINCT FROM OLD.status THEN
    INSERT INTO job_transitions (job_id, from_status, to_status, attempt) VALUES (NEW.id, OLD.status, NEW.status, NEW.attempts);
  END IF;
  RETURN NULL;
END $function$;

-- A statement's new jobs: each one's notification and first timeline row.
CREATE OR REPLACE FUNCTION public.conveyor_jobs_inserted()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  PERFORM pg_notify('conveyor_job_events', json_build_object(
      'tenantId', n.tenant_id,
      'jobId', n.id,
      'seq', n.seq,
      'type', n.type,
      'status', n.status,
      'attempts', n.attempts,
      'done', n.progress_done,
      'total', n.progress_total,
      'unit', n.progress_unit,
      'stage', n.progress_stage,
      'message', left(n.progress_message, 300),
      'bytes', n.progress_bytes,
      'children', CASE WHEN n.children_total IS NULL THEN NULL
                       ELSE json_build_object('total', n.children_total, 'done', n.children_done,
                                              'failed', n.children_failed) END,
      'cancelRequested', n.cancel_requested_at IS NOT NULL,
      'admission', CASE WHEN n.status NOT IN ('queued', 'retrying') THEN NULL
                        WHEN n.admitted_at IS NOT NULL THEN 'admitted'
                        WHEN conveyor_paused(n.queue, n.type, n.tenant_id) THEN 'paused'
                        ELSE 'waiting' END,
      'at', to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
    )::text)
    FROM new_jobs n;
  INSERT INTO job_transitions (job_id, from_status, to_status, attempt)
  SELECT id, NULL, status, attempts FROM new_jobs;
  RETURN NULL;
END $function$;

DROP TRIGGER jobs_notify ON jobs;
CREATE TRIGGER jobs_notify AFTER UPDATE ON jobs FOR EACH ROW EXECUTE FUNCTION conveyor_job_notify();
DROP TRIGGER jobs_record_transition ON jobs;
CREATE TRIGGER jobs_record_transition AFTER UPDATE OF status ON jobs FOR EACH ROW EXECUTE FUNCTION conveyor_job_record_transition();
CREATE TRIGGER jobs_inserted AFTER INSERT ON jobs REFERENCING NEW TABLE AS new_jobs
  FOR EACH STATEMENT EXECUTE FUNCTION conveyor_jobs_inserted();

-- 3. The quota gate serialises a tenant's creates, not a user's: concurrent creates by two users of
--    one tenant could pass the tenant's quota together (each held only its own user's lock; found
--    by a test creating for several users at once: 7 jobs accepted against a quota of 6). A user's
--    quota now counts their unfinished jobs in the tenant the job is for (the limit was already
--    that tenant's), so the tenant's lock covers both counts.
CREATE OR REPLACE FUNCTION public.conveyor_enqueue_gate(p_tenant uuid, p_user uuid, p_export_bytes boolean, p_per_user integer, p_per_tenant integer, p_bytes bigint, p_pending_user integer DEFAULT 0, p_pending_tenant integer DEFAULT 0)
 RETURNS boolean
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_key integer := hashtext(p_tenant::text);
  v_refusal jsonb;
BEGIN
  IF NOT pg_try_advisory_xact_lock(hashtext('conveyor_enqueue'), v_key) THEN
    v_refusal := conveyor_quota_refusal(p_tenant, p_user, p_export_bytes, p_per_user, p_per_tenant, p_bytes,
                                        p_pending_user, p_pending_tenant);
    IF v_refusal IS NOT NULL THEN
      RAISE EXCEPTION USING ERRCODE = 'CQ001', MESSAGE = v_refusal::text;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtext('conveyor_enqueue'), v_key);
  END IF;
  v_refusal := conveyor_quota_refusal(p_tenant, p_user, p_export_bytes, p_per_user, p_per_tenant, p_bytes,
                                      p_pending_user, p_pending_tenant);
  IF v_refusal IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'CQ001', MESSAGE = v_refusal::text;
  END IF;
  RETURN true;
END $function$;

CREATE OR REPLACE FUNCTION public.conveyor_quota_refusal(p_tenant uuid, p_user uuid, p_export_bytes boolean, p_per_user integer, p_per_tenant integer, p_bytes bigint, p_pending_user integer DEFAULT 0, p_pending_tenant integer DEFAULT 0)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_per_user integer;
  v_per_tenant integer;
  v_bytes_limit bigint;
  v_used bigint;
BEGIN
  SELECT coalesce(quota_jobs_per_user, p_per_user), coalesce(quota_jobs_per_tenant, p_per_tenant),
         coalesce(quota_export_bytes, p_bytes)
    INTO v_per_user, v_per_tenant, v_bytes_limit
    FROM tenants WHERE id = p_tenant;
  IF NOT FOUND THEN RETURN NULL; END IF;
  IF p_user IS NOT NULL THEN
    SELECT coalesce(sum(open), 0) + p_pending_user INTO v_used FROM open_job_counts
     WHERE tenant_id = p_tenant AND user_id = p_user;
    IF v_used >= v_per_user THEN
      RETURN jsonb_build_object('quota', 'jobs_per_user', 'limit', v_per_user, 'used', v_used);
    END IF;
  END IF;
  SELECT coalesce(sum(open), 0) + p_pending_tenant INTO v_used FROM open_job_counts
   WHERE tenant_id = p_tenant AND user_id = '00000000-0000-0000-0000-000000000000'::uuid;
  IF v_used >= v_per_tenant THEN
    RETURN jsonb_build_object('quota', 'jobs_per_tenant', 'limit', v_per_tenant, 'used', v_used);
  END IF;
  IF p_export_bytes THEN
    -- The bytes the tenant keeps: its live export files that have not expired, and its live uploads.
    v_used := coalesce((SELECT export_bytes + upload_bytes FROM tenant_storage WHERE tenant_id = p_tenant), 0)
            - (SELECT coalesce(sum(size), 0) FROM export_files
                WHERE tenant_id = p_tenant AND deleted_at IS NULL AND expires_at <= now());
    IF v_used >= v_bytes_limit THEN
      RETURN jsonb_build_object('quota', 'export_bytes', 'limit', v_bytes_limit, 'used', v_used);
    END IF;
  END IF;
  RETURN NULL;
END $function$;

-- (Read by (tenant, user) now: the primary key's order.)
DROP INDEX open_job_counts_user_id_idx;
