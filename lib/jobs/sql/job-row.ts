/**
 * A job read with SQL in the shape Prisma returns (JobModel): the hot reads (a create's
 * answer, `GET /api/v1/jobs`, `GET /api/v1/jobs/{id}`) go through node-postgres, not through
 * Prisma's query engine, whose work per call cost more than the rest of the request.
 * node-postgres hands int8 back as text: jobFromRow makes those BigInts, as Prisma does.
 */
import type { ExportFileModel, JobModel } from "../../generated/prisma/models";

/** Every column of `jobs`, named as Prisma names them; `j.` qualifies them for queries that join. */
export const jobColumns = (j = "") =>
  `${j}id, ${j}tenant_id AS "tenantId", ${j}type, ${j}queue, ${j}priority, ${j}status, ${j}input,
  ${j}idempotency_key AS "idempotencyKey", ${j}input_hash AS "inputHash", ${j}attempts, ${j}max_attempts AS "maxAttempts",
  ${j}progress_done AS "progressDone", ${j}progress_total AS "progressTotal", ${j}progress_unit AS "progressUnit",
  ${j}progress_stage AS "progressStage", ${j}progress_message AS "progressMessage", ${j}progress_detail AS "progressDetail", ${j}seq, ${j}checkpoint, ${j}result,
  ${j}error_class AS "errorClass", ${j}error_message AS "errorMessage", ${j}error_stack AS "errorStack",
  ${j}error_fingerprint AS "errorFingerprint", ${j}lease_owner AS "leaseOwner", ${j}lease_expires_at AS "leaseExpiresAt",
  ${j}heartbeat_at AS "heartbeatAt", ${j}fencing_token AS "fencingToken", ${j}parent_id AS "parentId",
  ${j}replay_of_id AS "replayOfId", ${j}discarded_at AS "discardedAt", ${j}created_by_id AS "createdById",
  ${j}run_at AS "runAt", ${j}created_at AS "createdAt", ${j}updated_at AS "updatedAt", ${j}started_at AS "startedAt",
  ${j}finished_at AS "finishedAt", ${j}cancel_requested_at AS "cancelRequestedAt", ${j}admitted_at AS "admittedAt",
  ${j}waiting_since AS "waitingSince", ${j}cancel_requested_by_id AS "cancelRequestedById",
  ${j}cancel_reason AS "cancelReason", ${j}children_total AS "childrenTotal", ${j}children_done AS "childrenDone",
  ${j}children_failed AS "childrenFailed", ${j}progress_bytes AS "progressBytes", ${j}child_index AS "childIndex",
  ${j}resume_pending AS "resumePending", ${j}resumes, ${j}trace_context AS "traceContext", ${j}rollup_progress AS "rollupProgress",
  ${j}progress_samples AS "progressSamples", ${j}children_retrying AS "childrenRetrying",
  ${j}children_retries AS "childrenRetries"`;

export const JOB_COLUMNS = jobColumns();

export type JobRow = Omit<JobModel, "progressDone" | "progressTotal" | "fencingToken" | "progressBytes"> & {
  progressDone: string;
  progressTotal: string | null;
  fencingToken: string;
  progressBytes: string | null;
};

export function jobFromRow(row: JobRow): JobModel {
  return {
    ...row,
    progressDone: BigInt(row.progressDone),
    progressTotal: row.progressTotal === null ? null : BigInt(row.progressTotal),
    fencingToken: BigInt(row.fencingToken),
    progressBytes: row.progressBytes === null ? null : BigInt(row.progressBytes),
  };
}

/**
 * A job's files as one JSON array (`j`: the jobs row's alias), oldest first, in ExportFileModel's
 * names; filesFromJson makes them ExportFileModels.
 */
export const jobFilesJson = (j: string) => `(SELECT coalesce(json_agg(json_build_object(
    'id', f.id, 'jobId', f.job_id, 'tenantId', f.tenant_id, 'name', f.name, 'storageKey', f.storage_key,
    'contentType', f.content_type, 'size', f.size::text, 'sha256', f.sha256, 'rowCount', f.row_count::text,
    'createdAt', f.created_at, 'expiresAt', f.expires_at, 'downloadCount', f.download_count,
    'deletedAt', f.deleted_at, 'partial', f.partial, 'replacedById', f.replaced_by_id) ORDER BY f.id), '[]')
  FROM export_files f WHERE f.job_id = ${j}.id)`;

export type FileJson = Omit<ExportFileModel, "size" | "rowCount" | "createdAt" | "expiresAt" | "deletedAt"> & {
  size: string;
  rowCount: string;
  createdAt: string;
  expiresAt: string;
  deletedAt: string | null;
};

export function filesFromJson(files: FileJson[]): ExportFileModel[] {
  return files.map((f) => ({
    ...f,
    size: BigInt(f.size),
    rowCount: BigInt(f.rowCount),
    createdAt: new Date(f.createdAt),
    expiresAt: new Date(f.expiresAt),
    deletedAt: f.deletedAt === null ? null : new Date(f.deletedAt),
  }));
}
