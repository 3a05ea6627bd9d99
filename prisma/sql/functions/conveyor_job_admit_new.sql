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
        PERFORM conveyor_dispatch(NEW.id, NEW.queue, NEW.type);
        RETURN NEW;
      END IF;
    END IF;
  END IF;
  PERFORM pg_notify('conveyor_admit', NEW.queue);
  RETURN NEW;
END $function$;
