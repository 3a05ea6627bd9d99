-- Retention (lib/retention): finished jobs, dead letters and audit entries are pruned after a
-- number of days; a tenant may have its own (null: JOB_RETENTION_DAYS, DEAD_LETTER_RETENTION_DAYS,
-- AUDIT_RETENTION_DAYS), set by platform admins.

ALTER TABLE "tenants" ADD COLUMN "job_retention_days" INTEGER,
  ADD COLUMN "dead_letter_retention_days" INTEGER,
  ADD COLUMN "audit_retention_days" INTEGER,
  ADD CONSTRAINT "tenants_retention_days_check" CHECK (
    ("job_retention_days" IS NULL OR "job_retention_days" BETWEEN 1 AND 3650)
    AND ("dead_letter_retention_days" IS NULL OR "dead_letter_retention_days" BETWEEN 1 AND 3650)
    AND ("audit_retention_days" IS NULL OR "audit_retention_days" BETWEEN 1 AND 3650));

-- The pruner's scan: each tenant's root jobs by the time they ended, oldest first. It reads
-- only what ended before the cutoff, so a tick with nothing to prune costs almost nothing.
CREATE INDEX "jobs_prune_idx" ON "jobs" ("tenant_id", "finished_at") WHERE "parent_id" IS NULL AND "finished_at" IS NOT NULL;

-- Deleting a pruned import's job sets its upload's import_job_id to null: without this index
-- every pruned job would scan the whole uploads table for it.
CREATE INDEX "uploads_import_job_idx" ON "uploads" ("import_job_id") WHERE "import_job_id" IS NOT NULL;
