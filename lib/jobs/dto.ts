/**
 * The wire shape of a job (JobDto), converted from rows in one place.
 */
import { admissionOf, type Admission, type PauseScope } from "../admission/scope";
import type { ExportFileModel, JobModel } from "../generated/prisma/models";

export type JobFileDto = {
  id: string;
  name: string;
  size: number;
  sha256: string;
  rows: number;
  contentType: string;
  downloadUrl: string;
  expiresAt: string;
  downloadCount: number;
  expired: boolean;
  /** The finished parts of an export some of whose parts failed (offered although the export failed). */
  partial: boolean;
};

export type JobStatus = JobModel["status"];

export type JobDto = {
  id: string;
  tenantId: string;
  type: string;
  queue: string;
  status: JobStatus;
  input: unknown;
  progress: { done: number; total: number | null; unit: string | null; stage: string | null; message: string | null };
  seq: number;
  attempts: number;
  maxAttempts: number;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  runAt: string;
  error: { class: string | null; message: string } | null;
  result: { rows?: number; files: JobFileDto[] } | null;
  /**
   * Where a waiting job stands: `admitted` (handed to a worker pool, about to
   * start), `waiting` (its tenant is at its cap, or it awaits its turn), `paused`
   * (an operator paused its scope). Null once it runs or ended.
   */
  admission: Admission | null;
};

export const terminalStatuses: readonly JobStatus[] = ["succeeded", "failed", "cancelled", "expired"];

export function isTerminal(status: JobStatus): boolean {
  return terminalStatuses.includes(status);
}

export function toFileDto(file: ExportFileModel, now = new Date()): JobFileDto {
  return {
    id: file.id,
    name: file.name,
    size: Number(file.size),
    sha256: file.sha256,
    rows: Number(file.rowCount),
    contentType: file.contentType,
    downloadUrl: `/api/v1/exports/${file.jobId}/download`,
    expiresAt: file.expiresAt.toISOString(),
    downloadCount: file.downloadCount,
    expired: file.expiresAt <= now || file.deletedAt !== null,
    partial: file.partial,
  };
}

/** `pauses`: the active pause scopes, to tell a paused job from one waiting its turn. */
export function toJobDto(job: JobModel, files: ExportFileModel[] = [], pauses: PauseScope[] = []): JobDto {
  const stored = (job.result ?? null) as { rows?: number } | null;
  return {
    id: job.id,
    tenantId: job.tenantId,
    type: job.type,
    queue: job.queue,
    status: job.status,
    input: job.input,
    progress: {
      done: Number(job.progressDone),
      total: job.progressTotal === null ? null : Number(job.progressTotal),
      unit: job.progressUnit,
      stage: job.progressStage,
      message: job.progressMessage,
    },
    seq: job.seq,
    attempts: job.attempts,
    maxAttempts: job.maxAttempts,
    createdAt: job.createdAt.toISOString(),
    startedAt: job.startedAt?.toISOString() ?? null,
    finishedAt: job.finishedAt?.toISOString() ?? null,
    runAt: job.runAt.toISOString(),
    error: job.errorMessage ? { class: job.errorClass, message: job.errorMessage } : null,
    result:
      job.status === "succeeded" || job.status === "expired"
        ? { rows: stored?.rows, files: files.map((f) => toFileDto(f)) }
        : files.some((f) => f.partial)
          ? { rows: files.reduce((a, f) => a + Number(f.rowCount), 0), files: files.map((f) => toFileDto(f)) }
          : null,
    admission: admissionOf(job, pauses),
  };
}
