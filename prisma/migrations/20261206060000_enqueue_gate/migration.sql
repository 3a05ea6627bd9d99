-- Accepting a job in one statement (issue 15): the quotas of unfinished work are checked inside
-- the INSERT that creates the job, under the per-user lock, instead of an interactive transaction
-- (BEGIN, lock, count, INSERT, COMMIT: five round trips, with the lock held across them).

-- What a new job would pass: NULL when it fits, else {quota, limit, used} for the first quota it
-- passes (jobs_per_user, jobs_per_tenant, export_bytes with p_export_bytes). The tenant's own
-- quotas win over the defaults given. Counts stop at the limit: O(limit), never O(backlog).
-- No such tenant: NULL (the insert says so).
CREATE FUNCTION "conveyor_quota_refusal"(p_tenant uuid, p_user uuid, p_export_bytes boolean,
                                         p_per_user integer, p_per_tenant integer, p_bytes bigint)
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
    SELECT count(*) INTO v_used FROM (
      SELECT 1 FROM jobs WHERE created_by_id = p_user
         AND status IN ('scheduled', 'queued', 'running', 'retrying') AND parent_id IS NULL
       LIMIT v_per_user) s;
    IF v_used >= v_per_user THEN
      RETURN jsonb_build_object('quota', 'jobs_per_user', 'limit', v_per_user, 'used', v_used);
    END IF;
  END IF;
  SELECT count(*) INTO v_used FROM (
    SELECT 1 FROM jobs WHERE tenant_id = p_tenant
       AND status IN ('scheduled', 'queued', 'running', 'retrying') AND parent_id IS NULL
     LIMIT v_per_tenant) s;
  IF v_used >= v_per_tenant THEN
    RETURN jsonb_build_object('quota', 'jobs_per_tenant', 'limit', v_per_tenant, 'used', v_used);
  END IF;
  IF p_export_bytes THEN
    -- The bytes the tenant keeps: its live export files and its live uploads (declared sizes).
    v_used := (SELECT coalesce(sum(size), 0) FROM export_files
                WHERE tenant_id = p_tenant AND deleted_at IS NULL AND expires_at > now())
            + (SELECT coalesce(sum(size), 0) FROM uploads WHERE tenant_id = p_tenant AND deleted_at IS NULL);
    IF v_used >= v_bytes_limit THEN
      RETURN jsonb_build_object('quota', 'export_bytes', 'limit', v_bytes_limit, 'used', v_used);
    END IF;
  END IF;
  RETURN NULL;
END $$;

-- The gate a quota-checked INSERT passes (`INSERT INTO jobs ... SELECT ... WHERE conveyor_enqueue_gate(...)`):
-- takes the lock per creating user (the tenant's without one) that every quota-checked create of
-- theirs takes, until the commit, then checks the quotas; over one, raises SQLSTATE CQ001 with the
-- refusal ({quota, limit, used}) as the message, and nothing is inserted. A volatile function's
-- statements take fresh snapshots: the count, after the lock, sees every job committed before it,
-- so concurrent creates cannot all pass a check the last one fails. While another create of the
-- same user holds the lock, the quotas are checked first without it: a flood past its quota is
-- refused at once and never waits in line (nor holds connections waiting).
CREATE FUNCTION "conveyor_enqueue_gate"(p_tenant uuid, p_user uuid, p_export_bytes boolean,
                                        p_per_user integer, p_per_tenant integer, p_bytes bigint)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  v_key integer := hashtext(coalesce(p_user, p_tenant)::text);
  v_refusal jsonb;
BEGIN
  IF NOT pg_try_advisory_xact_lock(hashtext('conveyor_enqueue'), v_key) THEN
    v_refusal := conveyor_quota_refusal(p_tenant, p_user, p_export_bytes, p_per_user, p_per_tenant, p_bytes);
    IF v_refusal IS NOT NULL THEN
      RAISE EXCEPTION USING ERRCODE = 'CQ001', MESSAGE = v_refusal::text;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtext('conveyor_enqueue'), v_key);
  END IF;
  v_refusal := conveyor_quota_refusal(p_tenant, p_user, p_export_bytes, p_per_user, p_per_tenant, p_bytes);
  IF v_refusal IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'CQ001', MESSAGE = v_refusal::text;
  END IF;
  RETURN true;
END $$;
