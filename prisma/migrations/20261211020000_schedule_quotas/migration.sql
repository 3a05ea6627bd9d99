-- Schedules pass the quotas (issue 32, item 4). The scheduler, backfill and trigger inserted runs
-- without the enqueue gate: a schedule's runs now pass it, checked against the schedule's owner (its
-- creator) and tenant, and a run the quotas refuse is not made but recorded: a `quota_skipped`
-- event naming the quota (state as data: a column, not a phrase), and counted on the schedule.

ALTER TABLE "schedule_events" DROP CONSTRAINT "schedule_events_kind_check",
  ADD COLUMN "quota" TEXT,
  ADD CONSTRAINT "schedule_events_kind_check"
    CHECK ("kind" IN ('missed', 'overlap_skipped', 'buffered', 'cancelled_other', 'quota_skipped')),
  -- The quota that refused the run: only, and always, on a quota_skipped event.
  ADD CONSTRAINT "schedule_events_quota_check"
    CHECK (("kind" = 'quota_skipped') = ("quota" IS NOT NULL)
           AND ("quota" IS NULL OR "quota" IN ('jobs_per_user', 'jobs_per_tenant', 'export_bytes')));

ALTER TABLE "schedules" ADD COLUMN "quota_skipped_count" INTEGER NOT NULL DEFAULT 0;

-- The gate of a statement's scheduled runs, row by row in the order given: for each, NULL when it
-- may be made (or already exists: the INSERT's ON CONFLICT skips it, and it adds nothing), else the
-- refusal `conveyor_quota_refusal` gives (a JSON object: quota, limit, used). Unlike
-- `conveyor_enqueue_gate` it raises nothing: one refused run must not cost the others theirs.
-- It takes the enqueue lock of every tenant first, in key order (as a batch of creates does, so
-- the two cannot deadlock), held to the commit: the counts it reads stay true until the runs it
-- lets through are inserted and counted, in the same transaction.
CREATE FUNCTION "conveyor_gate_scheduled_runs"(p_tenants uuid[], p_users uuid[], p_export_bytes boolean[],
                                               p_schedules uuid[], p_times timestamptz[],
                                               p_per_user integer, p_per_tenant integer, p_bytes bigint)
RETURNS jsonb[] LANGUAGE plpgsql AS $$
DECLARE
  v_key integer;
  v_out jsonb[] := '{}';
  -- Runs let through so far, by tenant and by tenant and owner (the counts take them in at the INSERT).
  v_pending jsonb := '{}';
  v_user_key text;
  v_pu integer;
  v_pt integer;
  v_refusal jsonb;
BEGIN
  FOR v_key IN SELECT DISTINCT hashtext(t::text) FROM unnest(p_tenants) t ORDER BY 1 LOOP
    PERFORM pg_advisory_xact_lock(hashtext('conveyor_enqueue'), v_key);
  END LOOP;
  FOR i IN 1 .. coalesce(array_length(p_tenants, 1), 0) LOOP
    IF EXISTS (SELECT 1 FROM jobs WHERE schedule_id = p_schedules[i] AND scheduled_for = p_times[i]) THEN
      v_out := array_append(v_out, NULL::jsonb);
      CONTINUE;
    END IF;
    v_user_key := p_tenants[i]::text || '/' || coalesce(p_users[i]::text, '');
    v_pu := coalesce((v_pending ->> v_user_key)::integer, 0);
    v_pt := coalesce((v_pending ->> p_tenants[i]::text)::integer, 0);
    v_refusal := conveyor_quota_refusal(p_tenants[i], p_users[i], p_export_bytes[i], p_per_user, p_per_tenant,
                                        p_bytes, v_pu, v_pt);
    IF v_refusal IS NULL THEN
      v_pending := v_pending || jsonb_build_object(v_user_key, v_pu + 1, p_tenants[i]::text, v_pt + 1);
    END IF;
    v_out := array_append(v_out, v_refusal);
  END LOOP;
  RETURN v_out;
END $$;
