/**
 * What an export attempt produces and how it is recorded: storage keys (one
 * path per attempt run, so a stale attempt can never overwrite or delete the
 * winner's file), the shared retry policy of exports and their parts, and the
 * `export_files` row that makes a file downloadable — written inside a fenced
 * transaction, with its expiry from the database's clock and the tenant's
 * retention.
 */
import type { SqlClient } from "../db";
import { env } from "../env";
import type { JobInfo, RetryPolicy } from "../jobs/task";
import type { ExportRequest } from "./schema";

/** Exports and their parts retry alike: a few times, backing off from 2 s to a minute. */
export const EXPORT_RETRY: RetryPolicy = {
  maxAttempts: 3,
  initialBackoffMs: 2_000,
  maxBackoffMs: 60_000,
  multiplier: 4,
  jitter: "full",
};

/**
 * The storage key of a file an attempt writes: `tenant/export/attempt/name`
 * (a run resumed after waiting for parts adds `.resume`); a part's file lives
 * under its export: `tenant/export/parts/part/attempt/name`.
 */
export function attemptFileKey(job: JobInfo, name: string, exportId?: string): string {
  const run = job.resume ? `${job.attempt}.${job.resume}` : `${job.attempt}`;
  return exportId
    ? `${job.tenantId}/${exportId}/parts/${job.id}/${run}/${name}`
    : `${job.tenantId}/${job.id}/${run}/${name}`;
}

export type ExportFileRecord = {
  name: string;
  key: string;
  size: number;
  sha256: string;
  rows: number;
  contentType: string;
};

/** What an export job returns (stored as its result). */
export type ExportResult = {
  rows: number;
  format: ExportRequest["format"];
  compression: ExportRequest["compression"];
  files: ExportFileRecord[];
};

/**
 * Records (or, for the same job and name, replaces) an export's file; it
 * expires after the tenant's retention (EXPORT_RETENTION_DAYS by default).
 * `partial`: the finished parts of an export that failed.
 */
export async function recordExportFile(
  tx: SqlClient,
  job: Pick<JobInfo, "id" | "tenantId">,
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
