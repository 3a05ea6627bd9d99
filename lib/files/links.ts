/**
 * Short-lived download links to a stored file (an export's, an import's
 * errors file): a random 256-bit token in the URL (`/d/dl_…`); only its
 * sha256 is stored, so a leaked database row opens nothing. Each workload
 * finds the file its caller may open; this records the link, audited.
 */
import { randomBytes } from "node:crypto";
import { z } from "zod";
import { recordAudit } from "../audit";
import type { Principal } from "../auth/principal";
import { db, type SqlClient } from "../db";
import { hashLink, LINK_PREFIX } from "./link-token";

export type ExportLinkDto = {
  id: string;
  expiresAt: string;
  revokedAt: string | null;
  downloadCount: number;
  createdAt: string;
  /** Only in the answer that creates it. */
  url?: string;
};

export const createLinkSchema = z
  .object({
    /** How long the link works: 1 minute to 7 days; 15 minutes by default. */
    ttlSeconds: z
      .number({ error: "must be a number of seconds" })
      .int("must be a whole number of seconds")
      .min(60, "must be at least 60")
      .max(7 * 86_400, "must be at most 604800 (7 days)")
      .default(900),
  })
  .strict();

/** A link to a file the caller was allowed to open (an export's file, an import's errors file), audited as `action`. */
export async function createFileLink(
  principal: Principal,
  job: { id: string; tenantId: string },
  fileId: string,
  ttlSeconds: number,
  action: string,
): Promise<ExportLinkDto> {
  const file = { id: fileId };
  const token = LINK_PREFIX + randomBytes(32).toString("base64url");
  // Never past the file's own expiry; both on the database's clock.
  const [created] = await db().$queryRaw<{ id: string }[]>`
    INSERT INTO export_links (id, file_id, tenant_id, created_by_id, token_hash, expires_at)
    SELECT gen_random_uuid(), f.id, f.tenant_id, ${principal.userId}::uuid, ${hashLink(token)},
           least(now() + make_interval(secs => ${ttlSeconds}::float8), f.expires_at)
    FROM export_files f WHERE f.id = ${file.id}::uuid
    RETURNING id`;
  const link = await db().exportLink.findUniqueOrThrow({ where: { id: created!.id } });
  await recordAudit(principal, {
    action,
    targetType: "job",
    targetIds: [job.id],
    tenantId: job.tenantId,
    details: { link: link.id, expiresAt: link.expiresAt.toISOString() },
  });
  return { ...toLinkDto(link), url: `/d/${token}` };
}

/**
 * A link to a file that no person asked for (a webhook's request carries it): valid
 * `ttlSeconds`, never past the file's expiry. Returns the token and its expiry; null when
 * the file no longer exists or has expired (nothing left to link to).
 */
export async function mintFileLink(
  client: SqlClient,
  fileId: string,
  ttlSeconds: number,
): Promise<{ token: string; expiresAt: Date } | null> {
  const token = LINK_PREFIX + randomBytes(32).toString("base64url");
  const { rows } = await client.query<{ expires_at: Date }>(
    `INSERT INTO export_links (id, file_id, tenant_id, token_hash, expires_at)
     SELECT gen_random_uuid(), f.id, f.tenant_id, $2, least(now() + make_interval(secs => $3::float8), f.expires_at)
       FROM export_files f WHERE f.id = $1 AND f.deleted_at IS NULL AND f.expires_at > now()
     RETURNING expires_at`,
    [fileId, hashLink(token), ttlSeconds],
  );
  return rows[0] ? { token, expiresAt: rows[0].expires_at } : null;
}

export function toLinkDto(l: {
  id: string;
  expiresAt: Date;
  revokedAt: Date | null;
  downloadCount: number;
  createdAt: Date;
}): ExportLinkDto {
  return {
    id: l.id,
    expiresAt: l.expiresAt.toISOString(),
    revokedAt: l.revokedAt?.toISOString() ?? null,
    downloadCount: l.downloadCount,
    createdAt: l.createdAt.toISOString(),
  };
}
