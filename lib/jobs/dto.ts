/**
 * The wire shape of a job (JobDto), converted from rows in one place.
 */
import { admissionOf, jobPause, type Admission, type JobPauseDto, type PauseContext } from "./admission-state";
import type { ExportFileModel, JobModel } from "../generated/prisma/models";
import { priorityName, type PriorityName } from "./priority-names";
import { progressWords } from "./progress-words";
import { recentRate, toSamples, type ProgressSample } from "./progress-rate";

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
  /**
   * The file that replaced this one (a repaired export's complete archive, replacing its partial
   * file): `downloadUrl` and the links made for this file give that one. Null when not replaced.
   */
  replacedBy: string | null;
};

export type JobStatus = JobModel["status"];

/**
 * A child in a retry: waiting for its next attempt (`retrying`, due at `runAt`) or running one
 * after a failed one (`running`). `index` is its place among its parent's children (0-based);
 * `attempt` the attempt that waits or runs.
 */
export type RetryingChildDto = {
  index: number;
  status: "retrying" | "running";
  attempt: number;
  maxAttempts: number;
  runAt: string;
};

/**
 * A parent's children: how many, how many succeeded, how many failed or were cancelled, how many
 * are in a retry (`retrying`) and the first five of those by place (`retries`).
 */
export type ChildCountsDto = {
  total: number;
  done: number;
  failed: number;
  retrying: number;
  retries: RetryingChildDto[];
};

export type JobProgressDto = {
  done: number;
  total: number | null;
  unit: string | null;
  /** The stage's key ("parse", "exporting"), as the task names it. */
  stage: string | null;
  /** The progress in words, made from the fields (`lib/client/progress.ts`); never written by a worker. */
  message: string | null;
  /** The stage's own counts ({ good, bad }, { chunk, chunks }), as its task writes them; null when none. */
  detail: Record<string, unknown> | null;
  /** Bytes produced so far (a parent: its finished children's), when the task counts them. */
  bytes: number | null;
  /**
   * Units per second over the last 30 s of this run, as of the answer (`recentRate`,
   * lib/jobs/progress-rate.ts); null before there is enough to tell, or when it does not run.
   */
  rate: number | null;
  /** This run's recent (time in ms, done) samples, for a client that recomputes the rate as time passes. */
  samples: ProgressSample[] | null;
  children: ChildCountsDto | null;
};

/** A cancel that was asked for and has not ended the job yet (or ended it): when, by whom, why. */
export type CancelRequestDto = { at: string; byUserId: string | null; by: string | null; reason: string | null };

export type JobDto = {
  id: string;
  tenantId: string;
  type: string;
  queue: string;
  /** Its place among its tenant's waiting jobs (lib/jobs/priority-names.ts): high, normal or low. */
  priority: PriorityName;
  status: JobStatus;
  input: unknown;
  progress: JobProgressDto;
  seq: number;
  attempts: number;
  maxAttempts: number;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  runAt: string;
  error: { class: string | null; message: string } | null;
  /** Set once somebody (or a pause, or its parent's cancel) asked the job to stop. */
  cancelRequested: CancelRequestDto | null;
  /** The job this one is a child of (an export part's export). */
  parentId: string | null;
  /** Its place among its parent's children (0-based). */
  childIndex: number | null;
  /** The dead job this one replays. */
  replayOfId: string | null;
  /** Who asked for it (an e-mail; null for a schedule's run, a part, or a deleted user). */
  requestedBy: string | null;
  /** A schedule's run: its schedule (null once deleted) and the occurrence it runs. */
  scheduleId: string | null;
  scheduledFor: string | null;
  result: { rows?: number; files: JobFileDto[] } | null;
  /**
   * Where a waiting job stands: `admitted` (handed to a worker pool, about to
   * start), `waiting` (its tenant is at its cap, or it awaits its turn), `paused`
   * (an operator paused its scope). Null once it runs or ended.
   */
  admission: Admission | null;
  /** The pause that holds it or (a parent) its parts: reason, who, since; null when none does. */
  pause: JobPauseDto | null;
};

/** How a job relates to others, for its page: the job it is part of, the job it replays, and its replays. */
export type JobRelations = { parent: JobDto | null; replayOf: JobDto | null; replays: JobDto[] };

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
    replacedBy: file.replacedById,
  };
}

/** A job row, optionally with who asked to cancel it (the relation, when the query included it). */
export type JobRowForDto = JobModel & {
  cancelRequestedBy?: { email: string } | null;
  createdBy?: { email: string } | null;
  /** A schedule's run: its schedule_runs row (when the query read it). */
  scheduleRun?: { scheduleId: string | null; scheduledFor: Date } | null;
};

/** A parent's retrying children as stored by the roll-up (conveyor_child_changed), read loosely. */
export function toRetries(raw: unknown): RetryingChildDto[] {
  if (!Array.isArray(raw)) return [];
  return raw.flatMap((r: Record<string, unknown> | null) =>
    r &&
    typeof r.index === "number" &&
    (r.status === "retrying" || r.status === "running") &&
    typeof r.attempt === "number" &&
    typeof r.maxAttempts === "number" &&
    typeof r.runAt === "string"
      ? [{ index: r.index, status: r.status, attempt: r.attempt, maxAttempts: r.maxAttempts, runAt: r.runAt }]
      : [],
  );
}

function progressDto(job: JobRowForDto, now: number): JobProgressDto {
  const samples = job.status === "running" ? toSamples(job.progressSamples) : null;
  const fields = {
    done: Number(job.progressDone),
    total: job.progressTotal === null ? null : Number(job.progressTotal),
    unit: job.progressUnit,
    stage: job.progressStage,
    detail: (job.progressDetail ?? null) as Record<string, unknown> | null,
    message: job.progressMessage,
  };
  return {
    ...fields,
    message: progressWords({ type: job.type, input: job.input, progress: fields }),
    bytes: job.progressBytes === null ? null : Number(job.progressBytes),
    rate: recentRate(samples, now),
    samples,
    children:
      job.childrenTotal === null
        ? null
        : {
            total: job.childrenTotal,
            done: job.childrenDone ?? 0,
            failed: job.childrenFailed ?? 0,
            retrying: job.childrenRetrying ?? 0,
            retries: toRetries(job.childrenRetries),
          },
  };
}

/** `pauses`: the active pause scopes, to tell a paused job from one waiting its turn. */
export function toJobDto(
  job: JobRowForDto,
  files: ExportFileModel[] = [],
  pauses: PauseContext = { scopes: [] },
): JobDto {
  const stored = (job.result ?? null) as { rows?: number } | null;
  return {
    id: job.id,
    tenantId: job.tenantId,
    type: job.type,
    queue: job.queue,
    priority: priorityName(job.priority),
    status: job.status,
    input: job.input,
    progress: progressDto(job, Date.now()),
    seq: job.seq,
    attempts: job.attempts,
    maxAttempts: job.maxAttempts,
    createdAt: job.createdAt.toISOString(),
    startedAt: job.startedAt?.toISOString() ?? null,
    finishedAt: job.finishedAt?.toISOString() ?? null,
    runAt: job.runAt.toISOString(),
    scheduleId: job.scheduleRun?.scheduleId ?? null,
    scheduledFor: job.scheduleRun?.scheduledFor.toISOString() ?? null,
    error: job.errorMessage ? { class: job.errorClass, message: job.errorMessage } : null,
    cancelRequested: job.cancelRequestedAt
      ? {
          at: job.cancelRequestedAt.toISOString(),
          byUserId: job.cancelRequestedById,
          by: job.cancelRequestedBy?.email ?? null,
          reason: job.cancelReason,
        }
      : null,
    parentId: job.parentId,
    childIndex: job.childIndex,
    replayOfId: job.replayOfId,
    requestedBy: job.createdBy?.email ?? null,
    result:
      job.status === "succeeded" || job.status === "expired"
        ? { rows: stored?.rows, files: files.map((f) => toFileDto(f)) }
        : files.some((f) => f.partial)
          ? { rows: files.reduce((a, f) => a + Number(f.rowCount), 0), files: files.map((f) => toFileDto(f)) }
          : null,
    admission: admissionOf(job, pauses.scopes),
    pause: jobPause(job, pauses),
  };
}
