CREATE OR REPLACE FUNCTION public.conveyor_admit(p_queue text, p_max integer DEFAULT 500)
 RETURNS integer
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_q queues%ROWTYPE;
  v_room integer;
  v_tenants uuid[];
  v_free integer[];
  v_vtime float8[];
  v_weight float8[];
  v_active boolean[];
  v_count integer;
  -- Per tenant: jobs fetched so far, jobs taken of them, whether it has no more due
  -- (a fetch found fewer than it asked for), and the last fetched job's key.
  v_fetched integer[];
  v_taken integer[];
  v_drained boolean[];
  v_last_prio integer[];
  v_last_run timestamptz[];
  v_last_id uuid[];
  -- Every fetched job, in fetch order, with its tenant's index; and the round-robin's picks (tenant indexes).
  f_id uuid[] := '{}';
  f_type text[] := '{}';
  f_ten integer[] := '{}';
  v_picks integer[] := '{}';
  c_id uuid[];
  c_type text[];
  c_prio integer[];
  c_run timestamptz[];
  v_best integer;
  v_weights float8;
  v_chunk integer;
  v_k integer;
  v_n integer := 0;
  v_clock float8;
  v_left boolean := false;
  v_ids uuid[];
  v_types text[];
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
  v_count := array_length(v_tenants, 1);
  v_active := array_fill(true, ARRAY[v_count]);
  v_fetched := array_fill(0, ARRAY[v_count]);
  v_taken := array_fill(0, ARRAY[v_count]);
  v_drained := array_fill(false, ARRAY[v_count]);
  -- Before every key: priorities are integers, run_at a timestamp, ids uuids.
  v_last_prio := array_fill(-2147483648, ARRAY[v_count]);
  v_last_run := array_fill('-infinity'::timestamptz, ARRAY[v_count]);
  v_last_id := array_fill('00000000-0000-0000-0000-000000000000'::uuid, ARRAY[v_count]);

  LOOP
    -- The tenant with the earliest virtual start time (weighted round-robin).
    v_best := NULL;
    v_weights := 0;
    FOR i IN 1 .. v_count LOOP
      IF v_active[i] AND v_free[i] > 0 THEN
        v_weights := v_weights + v_weight[i];
        IF v_best IS NULL OR v_vtime[i] < v_vtime[v_best] THEN v_best := i; END IF;
      END IF;
    END LOOP;
    EXIT WHEN v_best IS NULL;
    IF v_n >= v_room THEN v_left := true; EXIT; END IF;

    IF v_taken[v_best] >= v_fetched[v_best] THEN
      IF v_drained[v_best] THEN
        v_active[v_best] := false;  -- nothing more due, or all its types paused
        CONTINUE;
      END IF;
      -- Its next due jobs in order (priority, then run_at, then id), over the types not
      -- paused for it (one probe per type, so a paused type's backlog is never scanned):
      -- as many as it may take, up to about twice its weighted share of the room left.
      v_chunk := least(v_free[v_best], v_room - v_n,
                       greatest(1, ceil(2.0 * (v_room - v_n) * v_weight[v_best] / v_weights)::int));
      SELECT array_agg(j.id ORDER BY j.priority, j.run_at, j.id), array_agg(j.type ORDER BY j.priority, j.run_at, j.id),
             array_agg(j.priority ORDER BY j.priority, j.run_at, j.id), array_agg(j.run_at ORDER BY j.priority, j.run_at, j.id)
        INTO c_id, c_type, c_prio, c_run
        FROM (SELECT j.id, j.type, j.priority, j.run_at
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
                                 AND (priority, run_at, id) > (v_last_prio[v_best], v_last_run[v_best], v_last_id[v_best])
                               ORDER BY priority, run_at, id LIMIT v_chunk) j
               ORDER BY j.priority, j.run_at, j.id
               LIMIT v_chunk) j;
      v_k := coalesce(array_length(c_id, 1), 0);
      IF v_k < v_chunk THEN v_drained[v_best] := true; END IF;
      IF v_k > 0 THEN
        f_id := f_id || c_id;
        f_type := f_type || c_type;
        f_ten := f_ten || array_fill(v_best, ARRAY[v_k]);
        v_fetched[v_best] := v_fetched[v_best] + v_k;
        v_last_prio[v_best] := c_prio[v_k];
        v_last_run[v_best] := c_run[v_k];
        v_last_id[v_best] := c_id[v_k];
      END IF;
      CONTINUE;
    END IF;

    -- Its next fetched job is admitted.
    v_taken[v_best] := v_taken[v_best] + 1;
    v_picks := v_picks || v_best;
    v_n := v_n + 1;
    v_free[v_best] := v_free[v_best] - 1;
    v_clock := v_vtime[v_best];
    v_vtime[v_best] := v_vtime[v_best] + 1.0 / v_weight[v_best];
  END LOOP;

  IF v_n > 0 THEN
    -- The k-th pick of a tenant is its k-th fetched job. One UPDATE marks them all (a job
    -- cancelled or taken back since it was read is skipped), one add_jobs hands them over.
    WITH picks AS (
      SELECT p.ten, p.ord, row_number() OVER (PARTITION BY p.ten ORDER BY p.ord) AS rn
        FROM unnest(v_picks) WITH ORDINALITY AS p(ten, ord)
    ), fetched AS (
      SELECT f.id, f.type, f.ten, row_number() OVER (PARTITION BY f.ten ORDER BY f.ord) AS rn
        FROM unnest(f_id, f_type, f_ten) WITH ORDINALITY AS f(id, type, ten, ord)
    )
    SELECT array_agg(f.id ORDER BY p.ord), array_agg(f.type ORDER BY p.ord)
      INTO v_ids, v_types
      FROM picks p JOIN fetched f ON f.ten = p.ten AND f.rn = p.rn;
    -- (status::text: said as status IN (…), the check implies jobs_waiting_idx's predicate,
    -- and a planner without statistics scans that whole index instead of the primary key.)
    WITH marked AS (
      UPDATE jobs SET admitted_at = now()
       WHERE id = ANY(v_ids) AND status::text IN ('queued', 'retrying') AND admitted_at IS NULL
      RETURNING id
    )
    SELECT array_agg(c.id ORDER BY c.ord), array_agg(c.type ORDER BY c.ord)
      INTO v_ids, v_types
      FROM unnest(v_ids, v_types) WITH ORDINALITY AS c(id, type, ord)
     WHERE c.id IN (SELECT id FROM marked);
    PERFORM conveyor_dispatch_many(v_ids, p_queue, v_types);

    INSERT INTO admission_state (queue, tenant_id, vtime)
    SELECT p_queue, t, v FROM unnest(v_tenants, v_vtime) AS x(t, v)
    ON CONFLICT (queue, tenant_id) DO UPDATE SET vtime = excluded.vtime;
  END IF;
  IF v_n > 0 OR v_q.saturated IS DISTINCT FROM v_left THEN
    UPDATE queues SET vclock = v_clock, saturated = v_left WHERE name = p_queue;
  END IF;
  RETURN coalesce(array_length(v_ids, 1), 0);
END $function$;
