/**
 * Sharing and ending exports: short-lived download links (a random token in
 * the URL; only its sha256 is stored, so a leaked database row opens nothing),
 * revoking a link, deleting an export early, and the expiry cleanup the
 * workers run. A link that expired or was revoked, or whose file is gone,
 * answers 410 — never another file.
 */
import { recordAudit } from "../audit";
import { tenantScope } from "../auth/authorize";
import type { Principal } from "../auth/principal";
import { db, pool } from "../db";
import { AppError, notFound, parseOrThrow } from "../errors";
import { parseIdOr404 } from "../ids";
import { expireJobs } from "../jobs/transitions";
import { withMaintenanceLock } from "../maintenance";
import { storage } from "../storage";
import { hashLink, LINK_PREFIX } from "../files/link-token";
import { createFileLink, createLinkSchema, toLinkDto, type ExportLinkDto } from "../files/links";

export { createLinkSchema, type ExportLinkDto } from "../files/links";
import { sweepPartFiles } from "./parts";
import { downloadableFile, findDownloadableExport, openAndCount, type ExportDownload } from "./service";
import { logger } from "../log";
import { run as runSql } from "../sql";
import { segmentStateSchema } from "../storage/driver";
import { stagedSegments, stagedSegmentsDiscarded } from "./sql/statements";

/** The maintenance lock of this cleanup service: one process at a time, fleet-wide. */
export const EXPORT_CLEANUP_LOCK = "export_cleanup";

/** A new download link to an export's file, valid for `ttlSeconds` (never past the file's own expiry). */
export async function createExportLink(principal: Principal, rawJobId: string, body: unknown): Promise<ExportLinkDto> {
  const { ttlSeconds } = parseOrThrow(createLinkSchema, body ?? {});
  const { job, file } = await findDownloadableExport(principal, rawJobId);
  return createFileLink(principal, job, file.id, ttlSeconds, "export.link");
}

/** An export's links, newest first. */
export async function listExportLinks(principal: Principal, rawJobId: string): Promise<ExportLinkDto[]> {
  const jobId = parseIdOr404(rawJobId, "Export not found");
  const job = await db().job.findFirst({ where: { id: jobId, type: "export", ...tenantScope(principal) } });
  if (!job) throw notFound("Export not found");
  const links = await db().exportLink.findMany({ where: { file: { jobId } }, orderBy: { createdAt: "desc" } });
  return links.map(toLinkDto);
}

/** Revokes a link at once: it answers 410 from then on. */
export async function revokeExportLink(principal: Principal, rawJobId: string, rawLinkId: string): Promise<void> {
  const jobId = parseIdOr404(rawJobId, "Export not found");
  const linkId = parseIdOr404(rawLinkId, "Link not found");
  const link = await db().exportLink.findFirst({
    where: { id: linkId, file: { jobId, job: { ...tenantScope(principal) } } },
  });
  if (!link) throw notFound("Link not found");
  if (!link.revokedAt) {
    await db()
      .$executeRaw`UPDATE export_links SET revoked_at = now() WHERE id = ${linkId}::uuid AND revoked_at IS NULL`;
  }
  await recordAudit(principal, {
    action: "export.link_revoke",
    targetType: "job",
    targetIds: [jobId],
    tenantId: link.tenantId,
    details: { link: linkId },
  });
}

/**
 * Deletes an export's files before they expire: the files go from storage, the
 * job shows `expired` (a failed export's partial file is deleted likewise), its
 * links and downloads answer 410.
 */
export async function deleteExport(principal: Principal, rawJobId: string): Promise<void> {
  const jobId = parseIdOr404(rawJobId, "Export not found");
  const job = await db().job.findFirst({
    where: { id: jobId, type: "export", ...tenantScope(principal) },
    include: { files: true },
  });
  if (!job) throw notFound("Export not found");
  if (!job.files.some((f) => !f.deletedAt)) throw new AppError("gone", "This export has no files left to delete");
  await endFiles(job.files.filter((f) => !f.deletedAt));
  if (job.status === "succeeded") {
    await expireJobs(pool(), [jobId]);
  }
  await recordAudit(principal, {
    action: "export.delete",
    targetType: "job",
    targetIds: [jobId],
    tenantId: job.tenantId,
    details: { files: job.files.map((f) => f.name) },
  });
}

async function endFiles(files: { id: string; storageKey: string }[]): Promise<void> {
  for (const f of files) {
    // Marked first: from this moment downloads answer 410, even while the bytes are being removed.
    await db().$executeRaw`UPDATE export_files SET deleted_at = now() WHERE id = ${f.id}::uuid AND deleted_at IS NULL`;
    await storage().delete(f.storageKey);
  }
}

/**
 * Why a link opens nothing (`details.reason` of its 404/410): it never existed,
 * was revoked, ran out of time, or its export's file is gone (expired or deleted).
 */
export type LinkProblem = "unknown" | "revoked" | "expired" | "file_gone";

const linkError = (code: "not_found" | "gone", message: string, reason: LinkProblem) =>
  new AppError(code, message, undefined, { details: { reason } });

/** Opens the file behind a link token: 404 for a token that never existed, 410 once it cannot be used. */
export async function openLinkDownload(token: string): Promise<ExportDownload> {
  if (!token.startsWith(LINK_PREFIX) || token.length > 200) throw linkError("not_found", "Link not found", "unknown");
  const link = await db().exportLink.findUnique({
    where: { tokenHash: hashLink(token) },
    include: { file: { include: { job: { select: { status: true, type: true } } } } },
  });
  if (!link) throw linkError("not_found", "Link not found", "unknown");
  if (link.revokedAt) throw linkError("gone", "This link was revoked", "revoked");
  if (link.expiresAt <= new Date()) throw linkError("gone", "This link has expired", "expired");
  try {
    // An export's file waits for its export; another job's file (an import's errors) is there once recorded.
    const status = link.file.job.type === "export" ? link.file.job.status : "succeeded";
    return await openAndCount(downloadableFile(status, link.file), link.id);
  } catch (err) {
    if (err instanceof AppError && err.code === "gone") throw linkError("gone", err.message, "file_gone");
    throw err;
  }
}

/**
 * The expiry cleanup, run by the workers (one at a time): files past their
 * expiry are marked deleted and an export whose files have all ended shows
 * `expired`, then the bytes leave storage; the part files of split exports
 * that have ended go too, and so do the staged segments of files that will
 * never be finished. Returns how many of each.
 */
export async function cleanupExpiredExports(
  limit = 500,
): Promise<{ ran: boolean; files: number; jobs: number; parts: number; staged: number }> {
  const run = await withMaintenanceLock(
    EXPORT_CLEANUP_LOCK,
    (tx) => tx.$queryRaw<{ id: string; storageKey: string; jobId: string }[]>`
      UPDATE export_files SET deleted_at = now()
      WHERE id IN (SELECT id FROM export_files WHERE deleted_at IS NULL AND expires_at <= now() LIMIT ${limit})
      RETURNING id, storage_key AS "storageKey", job_id AS "jobId"`,
  );
  if (!run.ran) return { ran: false, files: 0, jobs: 0, parts: 0, staged: 0 };
  const files = run.value;
  // The state first (downloads answer 410 from the moment deleted_at is set), then the bytes.
  const gone = files.length
    ? await db().$queryRaw<{ id: string }[]>`
        SELECT j.id FROM jobs j
        WHERE j.id = ANY(${[...new Set(files.map((f) => f.jobId))]}::uuid[]) AND j.status = 'succeeded'
          AND j.type = 'export' -- an import's errors file expires alone: the import stays what it was
          AND NOT EXISTS (SELECT 1 FROM export_files f WHERE f.job_id = j.id AND f.deleted_at IS NULL)`
    : [];
  const jobs = (
    await expireJobs(
      pool(),
      gone.map((j) => j.id),
    )
  ).length;
  for (const f of files) {
    try {
      await storage().delete(f.storageKey);
    } catch (err) {
      logger.error(
        { err, storageKey: f.storageKey },
        `[exports] could not delete ${f.storageKey}: ${(err as Error).message}`,
      );
    }
  }
  // And the part files of split exports that have ended.
  const parts = await sweepPartFiles();
  const staged = await sweepStagedSegments(limit);
  return { ran: true, files: files.length, jobs, parts, staged };
}

/**
 * The staged segments of export files that will never be finished: an export or part that failed
 * for good or was cancelled while its file was half written keeps, in its checkpoint, the
 * staging file (local disk) or multipart upload (S3) it had written to — gigabytes for a large
 * export, and on S3 billed until aborted. No later run continues it (a replay or a repair starts
 * its files afresh), so it is thrown away and `file` leaves the checkpoint. Returns how many.
 */
export async function sweepStagedSegments(limit = 500): Promise<number> {
  const { rows } = await runSql(pool(), stagedSegments, [limit]);
  let swept = 0;
  for (const row of rows) {
    const state = segmentStateSchema.safeParse(row.file);
    try {
      // A state this version cannot read names nothing it could remove: dropped from the checkpoint alone.
      if (state.success) await storage().discardSegments(state.data);
      await runSql(pool(), stagedSegmentsDiscarded, [row.id]);
      swept++;
    } catch (err) {
      logger.error(
        { err, jobId: row.id },
        `[exports] could not discard the staged file of ${row.id}: ${(err as Error).message}`,
      );
    }
  }
  return swept;
}
