/** The `export.ready` webhook event, recorded with the export's files. */
import { randomBytes } from "node:crypto";
import type { SqlClient } from "../db";
import { appUrl } from "../env";
import { emitEvent, eventWanted } from "../events/outbox";
import type { JobInfo } from "../jobs/task";
import { hashLink, LINK_PREFIX } from "../files/link-token";

/** How long the link an `export.ready` webhook carries stays valid (never past the file's expiry). */
const WEBHOOK_LINK_TTL_SECONDS = 24 * 3600;

/**
 * Tells the tenant's endpoints that want `export.ready` (in the transaction
 * that records the export's files): the files, each with a download link valid
 * for 24 hours that needs no sign-in.
 */
export async function announceExportReady(tx: SqlClient, job: Pick<JobInfo, "id" | "tenantId">): Promise<void> {
  if (!(await eventWanted(tx, job.tenantId, "export.ready"))) return;
  const { rows: files } = await tx.query<{ id: string; name: string; size: string; rows: string | null }>(
    `SELECT id, name, size::text, row_count::text AS rows FROM export_files WHERE job_id = $1 ORDER BY name`,
    [job.id],
  );
  const out = [];
  for (const f of files) {
    const token = LINK_PREFIX + randomBytes(32).toString("base64url");
    const { rows } = await tx.query<{ expires_at: Date }>(
      `INSERT INTO export_links (id, file_id, tenant_id, token_hash, expires_at)
       SELECT gen_random_uuid(), f.id, f.tenant_id, $2, least(now() + make_interval(secs => $3::float8), f.expires_at)
       FROM export_files f WHERE f.id = $1 RETURNING expires_at`,
      [f.id, hashLink(token), WEBHOOK_LINK_TTL_SECONDS],
    );
    out.push({
      name: f.name,
      bytes: Number(f.size),
      rows: f.rows === null ? null : Number(f.rows),
      downloadUrl: `${appUrl()}/d/${token}`,
      expiresAt: rows[0]!.expires_at.toISOString(),
    });
  }
  await emitEvent(tx, {
    tenantId: job.tenantId,
    event: "export.ready",
    data: { jobId: job.id, downloadUrl: out[0]?.downloadUrl ?? null, files: out },
    jobId: job.id,
  });
}
