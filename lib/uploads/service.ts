/**
 * Uploads: files sent with the tus 1.0 protocol (./tus.ts), kept until an
 * import is done with them. One row per upload (`uploads`), its bytes in the
 * upload store (./store.ts). Everything here is scoped to a tenant: another
 * tenant's upload answers 404, never 403. Imports take an upload with
 * `claimUploadForImport`, read it with `openUpload`, and the cleanup removes
 * what nobody uses any more.
 */
import { Readable } from "node:stream";
import { requireTenant } from "../auth/authorize";
import type { Principal } from "../auth/principal";
import { inTransaction, pool, type SqlClient } from "../db";
import { env } from "../env";
import { AppError, notFound } from "../errors";
import { maintenanceLocks, withMaintenanceLock } from "../maintenance";
import { checkStorageQuota } from "../tenants/quotas";
import { uploadStore } from "./store";
import { logger } from "../log";

/** An upload as stored. Sizes in bytes. */
export type UploadRow = {
  id: string;
  tenantId: string;
  createdById: string | null;
  filename: string;
  contentType: string | null;
  /** The declared Upload-Length. */
  size: number;
  /** Bytes received (the offset last seen; the store's own is the truth while bytes arrive). */
  received: number;
  completedAt: Date | null;
  lastUsedAt: Date;
  /** The import job that claimed the upload. */
  importJobId: string | null;
  deletedAt: Date | null;
  createdAt: Date;
};

/** An upload on the wire (GET /api/v1/uploads). */
export type UploadDto = {
  id: string;
  filename: string;
  contentType: string | null;
  size: number;
  received: number;
  complete: boolean;
  completedAt: string | null;
  lastUsedAt: string;
  importJobId: string | null;
  createdAt: string;
  /** The tus upload URL (HEAD, PATCH, DELETE). */
  url: string;
};

/** The jobs statuses of an import that is still open: its upload stays claimed. */
const OPEN_JOB_STATUSES = ["scheduled", "queued", "running", "retrying"] as const;

/** Upload ids are 24 random bytes, base64url: 32 characters. */
const UPLOAD_ID = /^[A-Za-z0-9_-]{32}$/;

/** True for something shaped like an upload id (anything else cannot exist: 404 before Postgres). */
export function isUploadId(value: string): boolean {
  return UPLOAD_ID.test(value);
}

const COLUMNS = `id, tenant_id AS "tenantId", created_by_id AS "createdById", filename, content_type AS "contentType",
  size::float8 AS size, received::float8 AS received, completed_at AS "completedAt", last_used_at AS "lastUsedAt",
  import_job_id AS "importJobId", deleted_at AS "deletedAt", created_at AS "createdAt"`;

const uploadNotFound = () => notFound("Upload not found");

/** The UploadDto of a row. */
export function toUploadDto(u: UploadRow): UploadDto {
  return {
    id: u.id,
    filename: u.filename,
    contentType: u.contentType,
    size: u.size,
    received: u.completedAt ? u.size : u.received,
    complete: u.completedAt !== null,
    completedAt: u.completedAt?.toISOString() ?? null,
    lastUsedAt: u.lastUsedAt.toISOString(),
    importJobId: u.importJobId,
    createdAt: u.createdAt.toISOString(),
    url: `/api/v1/uploads/${u.id}`,
  };
}

async function liveUpload(client: SqlClient, tenantId: string, id: string, lock = false): Promise<UploadRow | null> {
  if (!isUploadId(id)) return null;
  const { rows } = await client.query<UploadRow>(
    `SELECT ${COLUMNS} FROM uploads WHERE id = $1 AND tenant_id = $2 AND deleted_at IS NULL${lock ? " FOR UPDATE" : ""}`,
    [id, tenantId],
  );
  return rows[0] ?? null;
}

/** The principal's tenant's live upload `id`; 404 for anything else (another tenant's, deleted, never made). */
export async function findUpload(principal: Principal, id: string): Promise<UploadRow> {
  const row = await liveUpload(pool(), requireTenant(principal), id);
  if (!row) throw uploadNotFound();
  return row;
}

/** The tenant's live uploads, newest first (at most `limit`, 100 by default). */
export async function listUploads(principal: Principal, limit = 100): Promise<UploadDto[]> {
  const { rows } = await pool().query<UploadRow>(
    `SELECT ${COLUMNS} FROM uploads WHERE tenant_id = $1 AND deleted_at IS NULL
     ORDER BY created_at DESC, id LIMIT $2`,
    [requireTenant(principal), Math.min(Math.max(1, limit), 500)],
  );
  return rows.map(toUploadDto);
}

/**
 * Records a new upload of the principal's tenant, refusing it (429
 * `quota_exceeded`) when its declared size would take the tenant's stored
 * bytes (export files and live uploads) past its quota. The tenant's creations
 * are serialised, so two at once cannot both squeeze under the quota.
 */
export async function createUploadRow(
  principal: Principal,
  u: { id: string; filename: string; contentType: string | null; size: number },
): Promise<UploadRow> {
  const tenantId = requireTenant(principal);
  return inTransaction(async (tx) => {
    await tx.query(`SELECT pg_advisory_xact_lock(hashtext('conveyor.uploads'), hashtext($1))`, [tenantId]);
    await checkStorageQuota(tenantId, u.size, tx);
    const { rows } = await tx.query<UploadRow>(
      `INSERT INTO uploads (id, tenant_id, created_by_id, filename, content_type, size)
       VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${COLUMNS}`,
      [u.id, tenantId, principal.userId, u.filename, u.contentType, u.size],
    );
    return rows[0]!;
  });
}

/**
 * The upload a tus request acts on (HEAD, PATCH, DELETE): the tenant's live
 * upload, else 404. PATCH and DELETE of a complete upload that an import
 * claimed answer 409: its bytes are the import's now.
 */
export async function uploadForRequest(tenantId: string, id: string, method: string): Promise<UploadRow> {
  const row = await liveUpload(pool(), tenantId, id);
  if (!row) throw uploadNotFound();
  if ((method === "PATCH" || method === "DELETE") && row.completedAt && row.importJobId) {
    throw new AppError(
      "conflict",
      `This upload is complete and import job ${row.importJobId} took it; it can no longer be changed or deleted`,
    );
  }
  return row;
}

/** Bytes arrived (or an offset was asked for): the offset seen and the last use. */
export async function recordProgress(id: string, offset: number): Promise<void> {
  await pool().query(
    `UPDATE uploads SET received = greatest(received, least($2::bigint, size)), last_used_at = now()
     WHERE id = $1 AND deleted_at IS NULL`,
    [id, offset],
  );
}

/** The last byte arrived. */
export async function markCompleted(id: string): Promise<void> {
  await pool().query(
    `UPDATE uploads SET received = size, completed_at = coalesce(completed_at, now()), last_used_at = now()
     WHERE id = $1 AND deleted_at IS NULL`,
    [id],
  );
}

/**
 * Marks the tenant's upload deleted, unless an import claimed it complete
 * (409); 404 when there is none. One statement, so a claim racing with it
 * either comes first (and this answers 409) or finds it deleted.
 */
export async function markDeleted(tenantId: string, id: string): Promise<void> {
  const { rowCount } = await pool().query(
    `UPDATE uploads SET deleted_at = now()
     WHERE id = $1 AND tenant_id = $2 AND deleted_at IS NULL AND NOT (completed_at IS NOT NULL AND import_job_id IS NOT NULL)`,
    [id, tenantId],
  );
  if (!rowCount) await uploadForRequest(tenantId, id, "DELETE"); // throws 404 or 409
}

/**
 * Claims a complete upload of `tenantId` for the import job `jobId`, in the
 * caller's transaction `tx` (the row stays locked until it commits). 404 when
 * there is no such live upload of the tenant; 409 while it is incomplete, or
 * while another import that claimed it is still open (scheduled, queued,
 * running, retrying). Claiming again for the same job is harmless. `checkOnly`:
 * the same answers, without claiming (a quick refusal outside the transaction).
 */
export async function claimUploadForImport(
  tx: SqlClient,
  tenantId: string,
  uploadId: string,
  jobId: string,
  opts: { checkOnly?: boolean } = {},
): Promise<UploadRow> {
  const row = await liveUpload(tx, tenantId, uploadId, !opts.checkOnly);
  if (!row) throw uploadNotFound();
  if (!row.completedAt) {
    throw new AppError("conflict", `The upload is not complete (${row.received} of ${row.size} bytes)`, undefined, {
      details: { received: row.received, size: row.size },
    });
  }
  if (row.importJobId && row.importJobId !== jobId) {
    const { rows } = await tx.query<{ status: string }>(`SELECT status FROM jobs WHERE id = $1`, [row.importJobId]);
    const status = rows[0]?.status;
    if (status && (OPEN_JOB_STATUSES as readonly string[]).includes(status)) {
      throw new AppError("conflict", `The upload is already being imported by job ${row.importJobId} (${status})`);
    }
  }
  if (opts.checkOnly) return row;
  const { rows } = await tx.query<UploadRow>(
    `UPDATE uploads SET import_job_id = $2, last_used_at = now() WHERE id = $1 RETURNING ${COLUMNS}`,
    [uploadId, jobId],
  );
  return rows[0]!;
}

/**
 * The bytes of a complete, live upload from byte `start` (0: all of them), local or S3. 404 when there is
 * no such upload (or its bytes are gone), 409 while it is incomplete. Not
 * tenant-scoped: for imports that claimed it (check the tenant first).
 */
export async function openUpload(uploadId: string, start = 0): Promise<{ stream: Readable; size: number }> {
  if (!isUploadId(uploadId)) throw uploadNotFound();
  const { rows } = await pool().query<UploadRow>(
    `SELECT ${COLUMNS} FROM uploads WHERE id = $1 AND deleted_at IS NULL`,
    [uploadId],
  );
  const row = rows[0];
  if (!row) throw uploadNotFound();
  if (!row.completedAt) {
    throw new AppError("conflict", `The upload is not complete (${row.received} of ${row.size} bytes)`);
  }
  // The store's own record first: missing bytes are a 404 now, not an error in the middle of a read.
  try {
    await uploadStore().getUpload(uploadId);
  } catch (err) {
    if (isNotFound(err)) throw notFound("The upload's bytes are gone");
    throw err;
  }
  // From its end on there is nothing to read (and S3 would refuse the Range).
  const stream = start >= row.size ? Readable.from([]) : await uploadStore().read(uploadId, start);
  return { stream, size: row.size };
}

function isNotFound(err: unknown): boolean {
  const e = err as { code?: string; status_code?: number; name?: string; $metadata?: { httpStatusCode?: number } };
  return (
    e?.code === "ENOENT" ||
    e?.status_code === 404 ||
    e?.name === "NoSuchKey" ||
    e?.name === "NotFound" ||
    e?.$metadata?.httpStatusCode === 404
  );
}

/** The upload was used (an import reads it): its last use is now, so the cleanup leaves it alone. */
export async function touchUpload(uploadId: string): Promise<void> {
  await pool().query(`UPDATE uploads SET last_used_at = now() WHERE id = $1 AND deleted_at IS NULL`, [uploadId]);
}

/** Removes an upload: the row is marked deleted first (nothing opens it from then on), then the bytes go. Idempotent. */
export async function removeUpload(uploadId: string): Promise<void> {
  if (!isUploadId(uploadId)) return;
  await pool().query(`UPDATE uploads SET deleted_at = now() WHERE id = $1 AND deleted_at IS NULL`, [uploadId]);
  await removeBytes(uploadId);
}

async function removeBytes(uploadId: string): Promise<void> {
  try {
    await uploadStore().remove(uploadId);
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}

/**
 * The upload cleanup, for a periodic task (one process at a time: it takes a
 * maintenance lock, and skips when another holds it): removes uploads unused
 * for UPLOAD_UNUSED_HOURS, whatever their state, and those whose import job
 * ended `succeeded` or `cancelled` (a failed import keeps its upload for a
 * replay, until it is unused for long enough). Rows first, then bytes.
 */
export async function cleanupUploads(limit = 500): Promise<{ removed: number }> {
  const run = await withMaintenanceLock(
    maintenanceLocks.uploadCleanup,
    (tx) => tx.$queryRaw<{ id: string }[]>`
      UPDATE uploads SET deleted_at = now()
      WHERE id IN (
        SELECT u.id FROM uploads u
        WHERE u.deleted_at IS NULL
          AND (u.last_used_at < now() - make_interval(hours => ${env().UPLOAD_UNUSED_HOURS}::int)
               OR EXISTS (SELECT 1 FROM jobs j WHERE j.id = u.import_job_id AND j.status IN ('succeeded', 'cancelled')))
        LIMIT ${limit})
      RETURNING id`,
  );
  if (!run.ran) return { removed: 0 };
  for (const { id } of run.value) {
    try {
      await removeBytes(id);
    } catch (err) {
      logger.error(
        { err, uploadId: id },
        `[uploads] could not remove the bytes of upload ${id}: ${(err as Error).message}`,
      );
    }
  }
  return { removed: run.value.length };
}
