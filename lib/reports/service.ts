/**
 * Job-outcome reports as the API, the CLI and the tests use them: a request (the caller's
 * tenant only, like an export), and reading one back with its counts and its file.
 */
import { requireTenant, tenantScope } from "../auth/authorize";
import type { Principal } from "../auth/principal";
import { db } from "../db";
import { notFound } from "../errors";
import { downloadableFile, openAndCount, type ExportDownload } from "../files/open";
import { parseIdOr404 } from "../ids";
import type { JobDto } from "../jobs/dto";
import { enqueueJob } from "../jobs/enqueue";
import { allowedPriority, splitPriority } from "../jobs/priority";
import { getJob } from "../jobs/queries";
import type { ReportResult, ReportRow } from "./schema";
import { reportTask } from "./task";

export type ReportDto = {
  job: JobDto;
  /** Null until the job succeeded. */
  report: { from: string; to: string; total: number; rows: ReportRow[]; downloadUrl: string } | null;
};

/** Requests a report of the principal's tenant's jobs; answers at once with the queued job. */
export async function requestReport(principal: Principal, body: unknown): Promise<JobDto> {
  const tenantId = requireTenant(principal);
  const { rest, priority } = splitPriority(body);
  const { job } = await enqueueJob({
    tenantId,
    type: reportTask.type,
    input: rest,
    priority: await allowedPriority(tenantId, priority),
    createdById: principal.userId,
    quota: { userId: principal.userId },
  });
  return getJob(principal, job.id);
}

/** A report the principal may see (404 for another tenant's, or a job of another type). */
export async function getReport(principal: Principal, rawId: string): Promise<ReportDto> {
  const id = parseIdOr404(rawId, "Report not found");
  const found = await db().job.findFirst({ where: { id, type: reportTask.type, ...tenantScope(principal) } });
  if (!found) throw notFound("Report not found");
  const job = await getJob(principal, id);
  const result = found.status === "succeeded" ? (found.result as ReportResult | null) : null;
  return {
    job,
    report: result && {
      from: result.from,
      to: result.to,
      total: result.total,
      rows: result.rows,
      downloadUrl: reportTask.fileUrl!(id, result.file.name),
    },
  };
}

/** Opens a report's file: 404 for another tenant's, 409 before it has one, 410 once it expired. */
export async function openReportDownload(principal: Principal, rawId: string): Promise<ExportDownload> {
  const id = parseIdOr404(rawId, "Report not found");
  const job = await db().job.findFirst({
    where: { id, type: reportTask.type, ...tenantScope(principal) },
    include: { files: { orderBy: { createdAt: "asc" } } },
  });
  if (!job) throw notFound("Report not found");
  return openAndCount(downloadableFile(job.status, job.files[0]));
}
