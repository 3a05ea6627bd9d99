/**
 * Export requests and downloads, as the API and the UI use them.
 */
import type { Readable } from "node:stream";
import { requireTenant, tenantScope, type Principal } from "../auth/principal";
import { db } from "../db";
import { AppError, notFound } from "../errors";
import { parseIdOr404 } from "../ids";
import { pauseScopesFor } from "../admission/pause-scopes";
import { jobView } from "../jobs/catalog";
import type { JobDto } from "../jobs/dto";
import { enqueueJob } from "../jobs/enqueue";
import { storage } from "../storage";
import { exportTask } from "./task";

const MAX_IDEMPOTENCY_KEY = 200;

/** Requests an export of the principal's tenant's data; answers at once with the queued job. */
export async function requestExport(
  principal: Principal,
  body: unknown,
  idempotencyKey?: string | null,
): Promise<{ job: JobDto; created: boolean }> {
  const tenantId = requireTenant(principal);
  if (
    idempotencyKey !== undefined &&
    idempotencyKey !== null &&
    (idempotencyKey.length === 0 || idempotencyKey.length > MAX_IDEMPOTENCY_KEY)
  ) {
    throw new AppError(
      "invalid_input",
      `Invalid input: Idempotency-Key: must be 1 to ${MAX_IDEMPOTENCY_KEY} characters`,
      [{ path: "Idempotency-Key", message: `must be 1 to ${MAX_IDEMPOTENCY_KEY} characters` }],
    );
  }
  const { job, created } = await enqueueJob({
    tenantId,
    type: exportTask.type,
    input: body,
    createdById: principal.userId,
    idempotencyKey,
  });
  return { job: jobView(job, [], await pauseScopesFor([job])), created };
}

export type ExportDownload = { stream: Readable; size: number; name: string; contentType: string };

/** Opens an export's file for the principal: 404 for another tenant's, 410 once expired or deleted. */
export async function openExportDownload(principal: Principal, rawJobId: string): Promise<ExportDownload> {
  const jobId = parseIdOr404(rawJobId, "Export not found");
  const job = await db().job.findFirst({
    where: { id: jobId, type: exportTask.type, ...tenantScope(principal) },
    include: { files: { orderBy: { createdAt: "asc" } } },
  });
  if (!job) throw notFound("Export not found");
  const file = job.files[0];
  // A failed split export may offer its finished parts, marked partial.
  if (job.status !== "succeeded" && job.status !== "expired" && !(job.status === "failed" && file?.partial)) {
    throw new AppError("conflict", `The export is ${job.status}; there is nothing to download yet`);
  }
  if (!file || file.deletedAt || file.expiresAt <= new Date() || job.status === "expired") {
    throw new AppError("gone", "This export has expired or was deleted");
  }
  const opened = await storage().open(file.storageKey);
  if (!opened) throw new AppError("gone", "This export's file is no longer stored");
  await db().exportFile.update({ where: { id: file.id }, data: { downloadCount: { increment: 1 } } });
  return { stream: opened.stream, size: opened.size, name: file.name, contentType: file.contentType };
}
