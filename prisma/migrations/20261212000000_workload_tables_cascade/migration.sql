-- A workload's job-keyed tables go with their job by ON DELETE CASCADE (issue 33, item 1), so the
-- pruner (lib/retention/prune.ts) deletes jobs and names none of them. imports and export_files
-- already had such keys; webhook_deliveries and probe_effects named their job without one.
-- Their job_id columns are indexed (webhook_deliveries_job_idx, probe_effects_pkey): a cascade
-- finds a deleted job's rows by index, not by scanning.

-- Rows whose job is already gone (none should be: the pruner deleted them with it).
DELETE FROM "webhook_deliveries" d WHERE NOT EXISTS (SELECT 1 FROM "jobs" j WHERE j.id = d.job_id);
DELETE FROM "probe_effects" p WHERE NOT EXISTS (SELECT 1 FROM "jobs" j WHERE j.id = p.job_id);

-- Deferred: conveyor_webhook_deliver inserts a delivery before its job, in one transaction.
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_job_id_fkey"
  FOREIGN KEY ("job_id") REFERENCES "jobs"("id") ON UPDATE CASCADE ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED;
ALTER TABLE "probe_effects" ADD CONSTRAINT "probe_effects_job_id_fkey"
  FOREIGN KEY ("job_id") REFERENCES "jobs"("id") ON UPDATE CASCADE ON DELETE CASCADE;
