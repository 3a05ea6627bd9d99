/**
 * The `export_files` row that makes a stored file downloadable — an export's
 * file, an import's errors file — written inside the caller's transaction,
 * with its expiry from the database's clock and the tenant's retention.
 */
import type { SqlClient } from "../db";

/**
 * The part of a storage key that names one run of an attempt: `2`, or `2.1`
 * for its run after waiting for children. A file an attempt writes goes under
 * its own run, so a stale attempt never overwrites or deletes the winner's.
 */
export function attemptRun(job: { attempt: number; resume: number }): string {
  return job.resume ? `${job.attempt}.${job.resume}` : `${job.attempt}`;
}
import { env } from "../env";

export type ExportFileRecord = {
  name: string;
  key: string;
  size: number;
  sha256: string;
  rows: number;
  contentType: string;
};

/**
 * Records (or, for the same job and name, replaces) an export's file; it
 * expires after the tenant's retention (EXPORT_RETENTION_DAYS by default).
 * `partial`: the finished parts of an export that failed.
 */
export async function recordFile(
  tx: SqlClient,
  job: { id: string; tenantId: string },
  f: ExportFileRecord,
  partial = false,
): Promise<void> {
  await tx.query(
    `INSERT INTO export_files (id, job_id, tenant_id, name, storage_key, content_type, size, sha256, row_count,
                               expires_at, partial)
     SELECT gen_random_uuid(), $1, t.id, $3, $4, $5, $6, $7, $8,
            now() + make_interval(days => coalesce(t.export_retention_days, $9::int)), $10
     FROM tenants t WHERE t.id = $2
     ON CONFLICT (job_id, name) DO UPDATE SET storage_key = EXCLUDED.storage_key, content_type = EXCLUDED.content_type,
       size = EXCLUDED.size, sha256 = EXCLUDED.sha256, row_count = EXCLUDED.row_count,
       expires_at = EXCLUDED.expires_at, partial = EXCLUDED.partial`,
    [
      job.id,
      job.tenantId,
      f.name,
      f.key,
      f.contentType,
      f.size,
      f.sha256,
      f.rows,
      env().EXPORT_RETENTION_DAYS,
      partial,
    ],
  );
}
