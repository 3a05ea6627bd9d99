/**
 * Quotas: how much unfinished work a user and a tenant may have at once, and
 * how many bytes of export files and uploads a tenant may keep. A tenant's own values
 * (set by platform admins) win over the platform defaults (QUOTA_*). Checked
 * before a job is accepted; nothing already accepted is ever dropped.
 */
import { pool, type SqlClient } from "../db";
import { env } from "../env";
import { AppError } from "../errors";

export type QuotaName = "jobs_per_user" | "jobs_per_tenant" | "export_bytes";

export type TenantQuotas = { jobsPerUser: number; jobsPerTenant: number; exportBytes: number };

/** The quotas that apply to a tenant: its own, or the defaults. */
export function effectiveQuotas(t: {
  quotaJobsPerUser: number | null;
  quotaJobsPerTenant: number | null;
  quotaExportBytes: bigint | number | null;
}): TenantQuotas {
  const e = env();
  return {
    jobsPerUser: t.quotaJobsPerUser ?? e.QUOTA_JOBS_PER_USER,
    jobsPerTenant: t.quotaJobsPerTenant ?? e.QUOTA_JOBS_PER_TENANT,
    exportBytes: t.quotaExportBytes === null ? e.QUOTA_EXPORT_BYTES : Number(t.quotaExportBytes),
  };
}

/**
 * The bytes a tenant ($1) keeps: its live export files and its live uploads
 * (their declared sizes, from the moment they are created: uploads count
 * against the tenant's storage).
 */
const STORED_BYTES = `((SELECT coalesce(sum(size), 0) FROM export_files
                        WHERE tenant_id = $1 AND deleted_at IS NULL AND expires_at > now())
                     + (SELECT coalesce(sum(size), 0) FROM uploads WHERE tenant_id = $1 AND deleted_at IS NULL))`;

function exceeded(quota: QuotaName, limit: number, used: number, message: string): AppError {
  return new AppError("quota_exceeded", message, undefined, { details: { quota, limit, used } });
}

/** The SQLSTATE `conveyor_enqueue_gate` raises a refusal with (its message: the refusal's JSON). */
export const QUOTA_REFUSED = "CQ001";

type Refusal = { quota: QuotaName; limit: number | string; used: number | string };

/** The 429 for a refusal (`conveyor_quota_refusal`'s JSON): names the quota, its limit and the use. */
export function refusalError(r: Refusal): AppError {
  const limit = Number(r.limit);
  const used = Number(r.used);
  switch (r.quota) {
    case "jobs_per_user":
      return exceeded(
        "jobs_per_user",
        limit,
        used,
        `Quota exceeded: jobs_per_user — at most ${limit} unfinished jobs per user in this tenant, and you have ${used} here; wait for some to finish, or cancel some`,
      );
    case "jobs_per_tenant":
      return exceeded(
        "jobs_per_tenant",
        limit,
        used,
        `Quota exceeded: jobs_per_tenant — at most ${limit} unfinished jobs in this tenant, and it has ${used}; wait for some to finish`,
      );
    case "export_bytes":
      return exceeded(
        "export_bytes",
        limit,
        used,
        `Quota exceeded: export_bytes — this tenant keeps ${used} bytes of export files and uploads and may keep ${limit}; delete some exports or uploads (or wait for them to expire)`,
      );
  }
}

/** The 429 for a refusal `conveyor_enqueue_gate` raised (its error message, a JSON object). */
export function quotaRefusal(message: string): AppError {
  return refusalError(JSON.parse(message) as Refusal);
}

/**
 * Refuses (429 `quota_exceeded`, naming the quota, its limit and the current
 * use) a new job when its user or its tenant is at its quota of unfinished
 * jobs — and, with `exportBytes`, when the tenant keeps as many export bytes
 * as it may. One query (`conveyor_quota_refusal`, which the gate of a
 * quota-checked INSERT runs too); the counts stop just past the limit.
 */
export async function checkQuotas(
  tenantId: string,
  userId: string | null,
  opts: { exportBytes?: boolean } = {},
  client: SqlClient = pool(),
): Promise<void> {
  const e = env();
  const { rows } = await client.query<{ refusal: Refusal | null }>(
    `SELECT conveyor_quota_refusal($1::uuid, $2::uuid, $3::boolean, $4::int, $5::int, $6::bigint) AS refusal`,
    [tenantId, userId, Boolean(opts.exportBytes), e.QUOTA_JOBS_PER_USER, e.QUOTA_JOBS_PER_TENANT, e.QUOTA_EXPORT_BYTES],
  );
  const refusal = rows[0]?.refusal;
  if (refusal) throw refusalError(refusal);
}

/**
 * Refuses (429 `quota_exceeded`, quota `export_bytes`) `addBytes` more stored
 * bytes — a new upload's declared size — when the tenant's export files and
 * live uploads plus them would pass its quota. Run it in the transaction that
 * records the bytes, under a lock that serialises the tenant's writers.
 */
export async function checkStorageQuota(tenantId: string, addBytes: number, client: SqlClient = pool()): Promise<void> {
  const { rows } = await client.query<{ limit: string; used: string }>(
    `SELECT coalesce(quota_export_bytes, $2::bigint)::text AS limit, ${STORED_BYTES}::text AS used
     FROM tenants WHERE id = $1`,
    [tenantId, env().QUOTA_EXPORT_BYTES],
  );
  const r = rows[0];
  if (!r) return; // no such tenant: the insert will say so
  const limit = Number(r.limit);
  const used = Number(r.used);
  if (used + addBytes > limit) {
    throw exceeded(
      "export_bytes",
      limit,
      used,
      `Quota exceeded: export_bytes — this tenant keeps ${used} bytes of export files and uploads and may keep ${limit}; ${addBytes} more would pass it. Delete some uploads or exports`,
    );
  }
}
