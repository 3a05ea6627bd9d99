-- Unfinished jobs per user and per tenant as running counts (issue 15). The quota gate on every
-- create (`conveyor_quota_refusal`) counted the user's and the tenant's unfinished jobs row by row,
-- stopping at the limit: O(backlog) for a tenant whose quotas are raised (1.2-1.9 ms of a create at
-- 4,400 unfinished jobs, measured in psql; bench:api raises them to 10M). Now it sums a few rows.
--
-- Counted as before: a job without a parent whose status is scheduled, queued, running or retrying.
-- A row per (tenant, creator) and one per tenant (user_id = the nil uuid: all of the tenant's jobs,
-- with or without a creator), each sharded by the backend that wrote it (`shard`, its pid): a
-- connection only ever updates its own rows, so no transaction waits on another's counter (one row
-- per tenant would serialise every create and completion of the tenant on its lock), and
-- statements touching many tenants in any order cannot deadlock. The maintenance tick folds the
-- rows of ended backends into shard 0 (`conveyor_open_job_counts_compact`).

CREATE TABLE "open_job_counts" (
  "tenant_id" uuid NOT NULL,
  -- the creator; the nil uuid: the tenant's total
  "user_id" uuid NOT NULL,
  -- the writing backend's pid; 0: folded
  "shard" integer NOT NULL,
  "open" bigint NOT NULL,
  CONSTRAINT "open_job_counts_pkey" PRIMARY KEY ("tenant_id", "user_id", "shard")
);
-- (No foreign keys: a tenant's or user's deletion cascades to its jobs, whose triggers write here.)
CREATE INDEX "open_job_counts_user_id_idx" ON "open_job_counts" ("user_id");

-- New jobs: one upsert per tenant and creator per statement (a batch of creates, a schedule's runs).
-- Only the rows written: an INSERT ... ON CONFLICT DO NOTHING's skipped rows are not in new_jobs.
CREATE FUNCTION "conveyor_open_jobs_inserted"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- (conveyor_open_jobs_add, below, is resolved when this runs.)
  PERFORM conveyor_open_jobs_add(tenant_id, created_by_id, count(*))
     FROM new_jobs
    WHERE parent_id IS NULL AND status IN ('scheduled', 'queued', 'running', 'retrying')
    GROUP BY tenant_id, created_by_id;
  RETURN NULL;
END $$;
CREATE TRIGGER "jobs_open_count_inserted" AFTER INSERT ON "jobs" REFERENCING NEW TABLE AS new_jobs
  FOR EACH STATEMENT EXECUTE FUNCTION conveyor_open_jobs_inserted();

-- Adds `p_delta` to the tenant's total and, with a creator, to the creator's row, in this connection's
-- shard. (plpgsql: its plan is kept for the session, where a SQL function's would be made per call.)
CREATE FUNCTION "conveyor_open_jobs_add"(p_tenant uuid, p_user uuid, p_delta bigint) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO open_job_counts AS c (tenant_id, user_id, shard, open)
  SELECT p_tenant, u, pg_backend_pid(), p_delta
    FROM unnest(ARRAY['00000000-0000-0000-0000-000000000000'::uuid, p_user]) u WHERE u IS NOT NULL
  ON CONFLICT (tenant_id, user_id, shard) DO UPDATE SET open = c.open + EXCLUDED.open;
END $$;

-- A job leaving the count (finished, cancelled, deleted), or a counted job changing hands.
CREATE FUNCTION "conveyor_open_jobs_changed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.parent_id IS NULL AND OLD.status IN ('scheduled', 'queued', 'running', 'retrying') THEN
    PERFORM conveyor_open_jobs_add(OLD.tenant_id, OLD.created_by_id, -1);
  END IF;
  IF TG_OP = 'UPDATE' AND NEW.parent_id IS NULL AND NEW.status IN ('scheduled', 'queued', 'running', 'retrying') THEN
    PERFORM conveyor_open_jobs_add(NEW.tenant_id, NEW.created_by_id, 1);
  END IF;
  RETURN NULL;
END $$;
-- Only an update that moves a job in or out of the count, or moves a counted job to another tenant
-- or creator (a deleted user's jobs lose their creator): the conditions run in C, so progress and
-- the steps between open states (queued → running → retrying) never call the function.
CREATE TRIGGER "jobs_open_count_changed" AFTER UPDATE OF status, parent_id, tenant_id, created_by_id ON "jobs"
  FOR EACH ROW
  WHEN ((OLD.parent_id IS NULL AND OLD.status IN ('scheduled', 'queued', 'running', 'retrying'))
        IS DISTINCT FROM (NEW.parent_id IS NULL AND NEW.status IN ('scheduled', 'queued', 'running', 'retrying'))
     OR (NEW.parent_id IS NULL AND NEW.status IN ('scheduled', 'queued', 'running', 'retrying')
         AND (OLD.tenant_id, OLD.created_by_id) IS DISTINCT FROM (NEW.tenant_id, NEW.created_by_id)))
  EXECUTE FUNCTION conveyor_open_jobs_changed();
CREATE TRIGGER "jobs_open_count_deleted" AFTER DELETE ON "jobs" FOR EACH ROW
  WHEN (OLD.parent_id IS NULL AND OLD.status IN ('scheduled', 'queued', 'running', 'retrying'))
  EXECUTE FUNCTION conveyor_open_jobs_changed();

CREATE FUNCTION "conveyor_open_jobs_truncated"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM open_job_counts;
  RETURN NULL;
END $$;
CREATE TRIGGER "jobs_open_count_truncated" AFTER TRUNCATE ON "jobs" FOR EACH STATEMENT
  EXECUTE FUNCTION conveyor_open_jobs_truncated();

-- Recounted from the jobs themselves: here, and after a bulk load written without triggers
-- (scripts/seed-big.ts). The lock waits for every writer of `jobs` and holds off new ones.
CREATE FUNCTION "conveyor_open_job_counts_rebuild"() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  LOCK TABLE jobs IN SHARE MODE;
  DELETE FROM open_job_counts;
  INSERT INTO open_job_counts (tenant_id, user_id, shard, open)
  SELECT j.tenant_id, v.u, 0, count(*)
    FROM jobs j, LATERAL (VALUES ('00000000-0000-0000-0000-000000000000'::uuid), (j.created_by_id)) v(u)
   WHERE j.parent_id IS NULL AND j.status IN ('scheduled', 'queued', 'running', 'retrying') AND v.u IS NOT NULL
   GROUP BY 1, 2;
END $$;
SELECT conveyor_open_job_counts_rebuild();

-- The rows of backends that have ended, folded into shard 0, and rows at zero dropped; how many rows
-- were folded. A row is moved under its lock, whatever it holds by then (a new backend that reuses
-- an ended one's pid and writes meanwhile is folded too: the sum is the same).
CREATE FUNCTION "conveyor_open_job_counts_compact"() RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  v_moved integer;
BEGIN
  WITH gone AS (
    DELETE FROM open_job_counts
     WHERE shard <> 0 AND shard NOT IN (SELECT pid FROM pg_stat_activity WHERE pid IS NOT NULL)
    RETURNING tenant_id, user_id, open
  ), sums AS (
    SELECT tenant_id, user_id, sum(open)::bigint AS open, count(*) AS n FROM gone GROUP BY 1, 2
  ), folded AS (
    INSERT INTO open_job_counts AS c (tenant_id, user_id, shard, open)
    SELECT tenant_id, user_id, 0, open FROM sums ORDER BY 1, 2
    ON CONFLICT (tenant_id, user_id, shard) DO UPDATE SET open = c.open + EXCLUDED.open
  )
  SELECT coalesce(sum(n), 0) INTO v_moved FROM sums;
  DELETE FROM open_job_counts WHERE shard = 0 AND open = 0;
  RETURN v_moved;
END $$;

-- The quota check reads the counts: the user's across its tenants, the tenant's total. `p_pending_*`:
-- the jobs already let through earlier in the same statement (a batch of creates), which the
-- statement's trigger counts only at its end.
DROP FUNCTION "conveyor_enqueue_gate"(uuid, uuid, boolean, integer, integer, bigint);
DROP FUNCTION "conveyor_quota_refusal"(uuid, uuid, boolean, integer, integer, bigint);

CREATE FUNCTION "conveyor_quota_refusal"(p_tenant uuid, p_user uuid, p_export_bytes boolean,
                                         p_per_user integer, p_per_tenant integer, p_bytes bigint,
                                         p_pending_user integer DEFAULT 0, p_pending_tenant integer DEFAULT 0)
RETURNS jsonb LANGUAGE plpgsql AS $$
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
    SELECT coalesce(sum(open), 0) + p_pending_user INTO v_used FROM open_job_counts WHERE user_id = p_user;
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
END $$;

-- As before (20261206060000_enqueue_gate), with the statement's pending jobs passed on.
CREATE FUNCTION "conveyor_enqueue_gate"(p_tenant uuid, p_user uuid, p_export_bytes boolean,
                                        p_per_user integer, p_per_tenant integer, p_bytes bigint,
                                        p_pending_user integer DEFAULT 0, p_pending_tenant integer DEFAULT 0)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  v_key integer := hashtext(coalesce(p_user, p_tenant)::text);
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
END $$;
