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
import { pauseScopesFor } from "../jobs/pause-scopes";
import { pipelineStages, type StageView } from "../jobs/pipeline";
import { jobView } from "../jobs/view";
import { checkQuotas } from "../tenants/quotas";
import { claimUploadForImport } from "../uploads/service";
import type { ImportRequest, ParseOutput, ScanOutput } from "./stages";
import { importTask, type ImportResult } from "./task";

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
  const input = parseOrThrow(importTask.inputSchema, body);
  const { job, created } = await enqueueJob({
    tenantId,
    type: importTask.type,
    input,
    createdById: principal.userId,
    idempotencyKey,
    beforeInsert: async (tx, jobId, inserting) => {
      await checkQuotas(tenantId, principal.userId, {}, tx);
      // 404 for another tenant's upload, 409 for an unfinished one or one another open import holds;
      // claimed in the transaction that inserts the job.
      await claimUploadForImport(tx, tenantId, input.uploadId, jobId, { checkOnly: !inserting });
    },
  });
  return { job: jobView(job, [], await pauseScopesFor([job])), created };
}

/** The jobs an import ran as: the one asked for and the ones it replays, newest first. */
async function replayChain(jobId: string): Promise<string[]> {
  const { rows } = await pool().query<{ id: string }>(
    `WITH RECURSIVE chain AS (
       SELECT id, replay_of_id, 0 AS depth FROM jobs WHERE id = $1
       UNION ALL
       SELECT j.id, j.replay_of_id, c.depth + 1 FROM jobs j JOIN chain c ON j.id = c.replay_of_id WHERE c.depth < 50
     ) SELECT id FROM chain ORDER BY depth`,
    [jobId],
  );
  return rows.map((r) => r.id);
}

async function findImportJob(principal: Principal, rawId: string) {
  const id = parseIdOr404(rawId, "Import not found");
  const job = await db().job.findFirst({
    where: { id, type: importTask.type, ...tenantScope(principal) },
    include: { files: true, createdBy: { select: { email: true } }, cancelRequestedBy: { select: { email: true } } },
  });
  if (!job) throw notFound("Import not found");
  return job;
}

type ImportRow = {
  id: string;
  rows_read: string | null;
  rejected: string | null;
  inserted: string | null;
  updated: string | null;
  bad_rows: { line: number; column: string; reason: string }[];
};

/** The principal's import (404 for another tenant's or an unknown id), with its stages. */
export async function getImport(principal: Principal, rawId: string): Promise<ImportDto> {
  const job = await findImportJob(principal, rawId);
  const chain = await replayChain(job.id);
  const { rows } = await pool().query<ImportRow>(
    `SELECT id, rows_read::text, rejected::text, inserted::text, updated::text, bad_rows
     FROM imports WHERE id = ANY($1::uuid[]) OR job_id = $2 ORDER BY created_at LIMIT 1`,
    [chain, job.id],
  );
  const row = rows[0];
  const importId = row?.id ?? chain[chain.length - 1]!;
  const stages = await pipelineStages(pool(), importTask, chain);
  const scan = stages[0]?.status === "succeeded" ? (stages[0].result as ScanOutput) : null;
  const parse = stages[1]?.status === "succeeded" ? (stages[1].result as ParseOutput) : null;
  const result = job.status === "succeeded" ? (job.result as ImportResult) : null;
  const errors = await db().exportFile.findFirst({ where: { jobId: importId, name: "errors.csv", deletedAt: null } });
  const request = job.input as ImportRequest;
  const { rows: named } = await pool().query<{ filename: string }>(
    "SELECT filename FROM uploads WHERE id = $1 AND tenant_id = $2",
    [request.uploadId, job.tenantId],
  );
  const num = (v: string | null | undefined) => (v === null || v === undefined ? null : Number(v));
  return {
    job: jobView(job, [], await pauseScopesFor([job])),
    importId,
    request,
    fileName: named[0]?.filename ?? null,
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
}

/** The tenant's imports, newest first (at most `limit`). */
export async function listImports(principal: Principal, limit = 50): Promise<ImportDto[]> {
  requireTenant(principal);
  const jobs = await db().job.findMany({
    where: { type: importTask.type, ...tenantScope(principal) },
    orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    take: Math.max(1, Math.min(limit, 100)),
    select: { id: true },
  });
  return Promise.all(jobs.map((j) => getImport(principal, j.id)));
}

async function errorsFileOf(principal: Principal, rawId: string) {
  const job = await findImportJob(principal, rawId);
  const chain = await replayChain(job.id);
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
