/**
 * What an export attempt produces and how it is recorded: storage keys (one
 * path per attempt run, so a stale attempt can never overwrite or delete the
 * winner's file), the shared retry policy of exports and their parts, and the
 * `export_files` row that makes a file downloadable — written inside a fenced
 * transaction, with its expiry from the database's clock and the tenant's
 * retention.
 */
import type { JobInfo, RetryPolicy } from "../jobs/task";
import type { ExportRequest } from "./schema";
import { attemptRun, type ExportFileRecord } from "../files/record";

export { recordFile as recordExportFile, type ExportFileRecord } from "../files/record";

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
  const run = attemptRun(job);
  return exportId
    ? `${job.tenantId}/${exportId}/parts/${job.id}/${run}/${name}`
    : `${job.tenantId}/${job.id}/${run}/${name}`;
}

/** What an export job returns (stored as its result). */
export type ExportResult = {
  rows: number;
  format: ExportRequest["format"];
  compression: ExportRequest["compression"];
  files: ExportFileRecord[];
  /** A repair (./repair.ts): the export it completes, the parts it adopted from there and those it ran again. */
  repair?: { of: string; adopted: number[]; rerun: number[] };
  /** Rows an earlier attempt had committed when the last attempt started (0 or absent: it wrote the file from the start). */
  resumedFrom?: number;
};
