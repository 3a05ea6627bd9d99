/**
 * How long a tenant's history is kept: its own days (set by platform admins, lib/tenants/settings.ts)
 * or the platform's. The pruner (lib/retention) applies them.
 */
import { env } from "../env";

/** The days a tenant's finished jobs, dead letters and audit entries are kept. */
export type RetentionDays = { jobs: number; deadLetters: number; audit: number };

/** A tenant's retention settings (null: the platform default) and what applies. */
export function effectiveRetention(t: {
  jobRetentionDays: number | null;
  deadLetterRetentionDays: number | null;
  auditRetentionDays: number | null;
}): RetentionDays {
  return {
    jobs: t.jobRetentionDays ?? env().JOB_RETENTION_DAYS,
    deadLetters: t.deadLetterRetentionDays ?? env().DEAD_LETTER_RETENTION_DAYS,
    audit: t.auditRetentionDays ?? env().AUDIT_RETENTION_DAYS,
  };
}
