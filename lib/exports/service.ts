/**
 * Export requests and downloads, as the API and the UI use them.
 */
import { requireTenant, tenantScope } from "../auth/authorize";
import type { Principal } from "../auth/principal";
import { db } from "../db";
import { AppError, notFound, parseOrThrow } from "../errors";
import { parseIdOr404 } from "../ids";
import type { JobDto } from "../jobs/dto";
import { enqueueJob } from "../jobs/enqueue";
import { pauseScopesOfCreate } from "../jobs/pause-scopes";
import { allowedPriority, splitPriority } from "../jobs/priority";
import { jobView } from "../jobs/view";
import { isoInstant } from "../validation";
import { exportTask } from "./task";
import { downloadableFile, openAndCount, type ExportDownload } from "../files/open";

export { downloadableFile, openAndCount, type ExportDownload } from "../files/open";

const MAX_IDEMPOTENCY_KEY = 200;
/** How far ahead `runAt` may be. */
const MAX_RUN_AHEAD_MS = 366 * 86_400_000;

const runAtSchema = isoInstant.refine((v) => new Date(v).getTime() <= Date.now() + MAX_RUN_AHEAD_MS, {
  message: "must be at most a year ahead",
});

/** `runAt` out of the body (the job's input is the rest): a delayed export waits as `scheduled` until then. */
function splitRunAt(body: unknown): { input: unknown; runAt?: Date } {
  if (!body || typeof body !== "object" || Array.isArray(body) || !("runAt" in body)) return { input: body };
  const { runAt, ...input } = body as Record<string, unknown>;
  if (runAt === null || runAt === undefined) return { input };
  return { input, runAt: new Date(parseOrThrow(runAtSchema, runAt, "runAt")) };
}

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
  const { rest, priority } = splitPriority(body);
  const { input, runAt } = splitRunAt(rest);
  const result = await enqueueJob({
    tenantId,
    type: exportTask.type,
    input,
    priority: await allowedPriority(tenantId, priority),
    ...(runAt ? { runAt } : {}),
    createdById: principal.userId,
    idempotencyKey,
    // A user's and the tenant's unfinished jobs, and the tenant's kept export bytes: checked in the INSERT.
    quota: { userId: principal.userId, exportBytes: true },
  });
  return { job: jobView(result.job, [], await pauseScopesOfCreate(result)), created: result.created };
}

/**
 * The principal's export (404 for another tenant's) and its downloadable file.
 * A repaired export's partial file was replaced by its repair's archive: that one is given.
 */
export async function findDownloadableExport(principal: Principal, rawJobId: string) {
  const jobId = parseIdOr404(rawJobId, "Export not found");
  const job = await db().job.findFirst({
    where: { id: jobId, type: exportTask.type, ...tenantScope(principal) },
    include: { files: { orderBy: { createdAt: "asc" } } },
  });
  if (!job) throw notFound("Export not found");
  const replacedBy = job.files[0]?.replacedById;
  if (replacedBy) {
    const file = await db().exportFile.findFirst({
      where: { id: replacedBy, tenantId: job.tenantId },
      include: { job: { select: { status: true } } },
    });
    if (file) return { job, file: downloadableFile(file.job.status, file) };
  }
  return { job, file: downloadableFile(job.status, job.files[0]) };
}

/** Opens an export's file for the principal: 404 for another tenant's, 409 before it has one, 410 once ended. */
export async function openExportDownload(principal: Principal, rawJobId: string): Promise<ExportDownload> {
  const { file } = await findDownloadableExport(principal, rawJobId);
  return openAndCount(file);
}
