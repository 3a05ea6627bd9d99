/**
 * Import requests and what the API and the page read of them: the import with
 * its stages, the first bad rows, its counts and its errors file.
 */
import { requireTenant, tenantScope } from "../auth/authorize";
import type { Principal } from "../auth/principal";
import { db, pool } from "../db";
import { AppError, notFound, parseOrThrow } from "../errors";
import { createFileLink, createLinkSchema, type ExportLinkDto } from "../files/links";
import { openAndCount, type ExportDownload } from "../files/open";
import { parseIdOr404 } from "../ids";
import type { JobDto } from "../jobs/dto";
import { enqueueJob } from "../jobs/enqueue";
import { pauseScopesFor, pauseScopesOfCreate } from "../jobs/pause-scopes";
import { allowedPriority, splitPriority } from "../jobs/priority";
import { pipelineStages, replayChains, type StageView } from "../jobs/pipeline";
import { jobView } from "../jobs/view";
import { checkQuotas } from "../tenants/quotas";
import { claimUploadForImport } from "../uploads/service";
import type { ImportRequest, ParseOutput, ScanOutput } from "./stages";
import { importTask, type ImportResult } from "./task";
import { jobStatuses } from "../jobs/queries";

const MAX_IDEMPOTENCY_KEY = 200;

export type ImportStageDto = Omit<StageView, "result">;

export type ImportDto = {
  job: JobDto;
  /** The import's id: its first job's (a replay keeps it). */
  importId: string;
  request: ImportRequest;
  /** The uploaded file's name (as the upload's metadata gave it). */
  fileName: string | null;
  file: { size: number; sha256: string; rows: number; columns: string[] } | null;
  counts: {
    rowsRead: number | null;
    inserted: number | null;
    updated: number | null;
    rejected: number | null;
    duplicates: number | null;
  };
  /** The first bad rows (all are in the errors file). */
  badRows: { line: number; column: string; reason: string }[];
  errorsFile: { size: number; rows: number; expiresAt: string; url: string } | null;
  stages: ImportStageDto[];
};

function checkIdempotencyKey(key: string | null | undefined): void {
  if (key !== undefined && key !== null && (key.length === 0 || key.length > MAX_IDEMPOTENCY_KEY)) {
    throw new AppError(
      "invalid_input",
      `Invalid input: Idempotency-Key: must be 1 to ${MAX_IDEMPOTENCY_KEY} characters`,
      [{ path: "Idempotency-Key", message: `must be 1 to ${MAX_IDEMPOTENCY_KEY} characters` }],
    );
  }
}

/** Requests an import of a finished upload into the principal's tenant; answers at once with the queued job. */
export async function requestImport(
  principal: Principal,
  body: unknown,
  idempotencyKey?: string | null,
): Promise<{ job: JobDto; created: boolean }> {
  const tenantId = requireTenant(principal);
  checkIdempotencyKey(idempotencyKey);
  const { rest, priority } = splitPriority(body);
  const input = parseOrThrow(importTask.inputSchema, rest);
  const result = await enqueueJob({
    tenantId,
    type: importTask.type,
    input,
    priority: await allowedPriority(tenantId, priority),
    createdById: principal.userId,
    idempotencyKey,
    beforeInsert: async (tx, jobId, inserting) => {
      await checkQuotas(tenantId, principal.userId, {}, tx);
      // 404 for another tenant's upload, 409 for an unfinished one or one another open import holds;
      // claimed in the transaction that inserts the job.
      await claimUploadForImport(tx, tenantId, input.uploadId, jobId, { checkOnly: !inserting });
    },
  });
  return { job: jobView(result.job, [], await pauseScopesOfCreate(result)), created: result.created };
}

const jobInclude = {
  files: true,
  createdBy: { select: { email: true } },
  cancelRequestedBy: { select: { email: true } },
} as const;

async function findImportJob(principal: Principal, rawId: string) {
  const id = parseIdOr404(rawId, "Import not found");
  const job = await db().job.findFirst({
    where: { id, type: importTask.type, ...tenantScope(principal) },
    include: jobInclude,
  });
  if (!job) throw notFound("Import not found");
  return job;
}

type ImportJob = NonNullable<Awaited<ReturnType<typeof findImportJob>>>;

type ImportRow = {
  id: string;
  job_id: string;
  rows_read: string | null;
  rejected: string | null;
  inserted: string | null;
  updated: string | null;
  bad_rows: { line: number; column: string; reason: string }[];
};

/**
 * Import jobs as the API shows them. A fixed number of queries however many
 * (the list page asks for up to 100 on every change): their replay chains,
 * `imports` rows, stages, errors files, file names and pauses, each read once.
 */
async function importViews(jobs: ImportJob[]): Promise<ImportDto[]> {
  if (!jobs.length) return [];
  const chains = await replayChains(
    pool(),
    jobs.map((j) => j.id),
  );
  const all = [...chains.values()].flat();
  const [records, stagesOf, files, names, pauses] = await Promise.all([
    pool().query<ImportRow>(
      `SELECT id, job_id, rows_read::text, rejected::text, inserted::text, updated::text, bad_rows
       FROM imports WHERE id = ANY($1::uuid[])`,
      [all],
    ),
    pipelineStages(pool(), importTask, chains),
    db().exportFile.findMany({ where: { jobId: { in: all }, name: "errors.csv", deletedAt: null } }),
    pool().query<{ id: string; filename: string }>("SELECT id, filename FROM uploads WHERE id = ANY($1::text[])", [
      jobs.map((j) => (j.input as ImportRequest).uploadId),
    ]),
    pauseScopesFor(jobs),
  ]);
  const recordOf = new Map(records.rows.map((r) => [r.id, r]));
  const errorsOf = new Map(files.map((f) => [f.jobId, f]));
  const nameOf = new Map(names.rows.map((r) => [r.id, r.filename]));
  const num = (v: string | null | undefined) => (v === null || v === undefined ? null : Number(v));
  return jobs.map((job) => {
    const chain = chains.get(job.id)!;
    // The import's id is its first job's: the last of the chain.
    const importId = chain[chain.length - 1] ?? job.id;
    const row = recordOf.get(importId);
    const stages = stagesOf.get(job.id)!;
    const scan = stages[0]?.status === "succeeded" ? (stages[0].result as ScanOutput) : null;
    const parse = stages[1]?.status === "succeeded" ? (stages[1].result as ParseOutput) : null;
    const result = job.status === "succeeded" ? (job.result as ImportResult) : null;
    const errors = errorsOf.get(importId);
    const request = job.input as ImportRequest;
    return {
      job: jobView(job, [], pauses),
      importId,
      request,
      fileName: nameOf.get(request.uploadId) ?? null,
      file: scan ? { size: scan.size, sha256: scan.sha256, rows: scan.rows, columns: scan.columns } : null,
      counts: {
        rowsRead: num(row?.rows_read) ?? parse?.rowsRead ?? null,
        inserted: num(row?.inserted),
        updated: num(row?.updated),
        rejected: num(row?.rejected),
        duplicates: result?.duplicates ?? null,
      },
      badRows: row?.bad_rows ?? [],
      errorsFile:
        errors && errors.expiresAt > new Date()
          ? {
              size: Number(errors.size),
              rows: Number(errors.rowCount),
              expiresAt: errors.expiresAt.toISOString(),
              url: `/api/v1/imports/${job.id}/errors`,
            }
          : null,
      stages: stages.map(({ result: _result, ...s }) => s),
    };
  });
}

/** The principal's import (404 for another tenant's or an unknown id), with its stages. */
export async function getImport(principal: Principal, rawId: string): Promise<ImportDto> {
  const [view] = await importViews([await findImportJob(principal, rawId)]);
  return view!;
}

/** The statuses an import list may be filtered by (a job's). */
export const IMPORT_LIST_STATUSES = jobStatuses;
export type ImportListStatus = (typeof IMPORT_LIST_STATUSES)[number];

/** The tenant's imports, newest first (at most `limit`), only those in `status` when it is given. */
export async function listImports(principal: Principal, limit = 50, status?: ImportListStatus): Promise<ImportDto[]> {
  requireTenant(principal);
  const jobs = await db().job.findMany({
    where: { type: importTask.type, ...tenantScope(principal), ...(status ? { status } : {}) },
    orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    take: Math.max(1, Math.min(limit, 100)),
    include: jobInclude,
  });
  return importViews(jobs);
}

async function errorsFileOf(principal: Principal, rawId: string) {
  const job = await findImportJob(principal, rawId);
  const chain = (await replayChains(pool(), [job.id])).get(job.id)!;
  const file = await db().exportFile.findFirst({
    where: { jobId: { in: chain }, name: "errors.csv" },
    orderBy: { createdAt: "desc" },
  });
  if (!file) throw new AppError("conflict", "The import has no errors file yet: its parse stage has not finished");
  if (file.deletedAt || file.expiresAt <= new Date()) throw new AppError("gone", "The errors file has expired");
  return { job, file };
}

/** The import's errors file (line, column, reason, value): 404 for another tenant's, 409 before parse ended, 410 once expired. */
export async function openImportErrors(principal: Principal, rawId: string): Promise<ExportDownload> {
  const { file } = await errorsFileOf(principal, rawId);
  return openAndCount(file);
}

/** A short-lived link to the import's errors file (like an export's). */
export async function createImportErrorsLink(
  principal: Principal,
  rawId: string,
  body: unknown,
): Promise<ExportLinkDto> {
  const { ttlSeconds } = parseOrThrow(createLinkSchema, body ?? {});
  const { job, file } = await errorsFileOf(principal, rawId);
  return createFileLink(principal, job, file.id, ttlSeconds, "import.errors_link");
}
