/**
 * Tenants as platform admins manage them: the list, and each tenant's export
 * retention (how long its export files are kept; EXPORT_RETENTION_DAYS when unset).
 */
import { z } from "zod";
import { recordAudit } from "../audit";
import { requirePlatformAdmin, resolveTenantFor } from "../auth/authorize";
import type { Principal } from "../auth/principal";
import { db } from "../db";
import { env } from "../env";
import { parseOrThrow } from "../errors";

export type TenantDto = {
  id: string;
  slug: string;
  name: string;
  /** The tenant's own retention, or null for the default. */
  exportRetentionDays: number | null;
  /** What applies: its own or the default. */
  effectiveRetentionDays: number;
};

/** How long a tenant's export files are kept: its own setting, or EXPORT_RETENTION_DAYS. */
export function retentionDaysOf(tenant: { exportRetentionDays: number | null }): number {
  return tenant.exportRetentionDays ?? env().EXPORT_RETENTION_DAYS;
}

function toDto(t: { id: string; slug: string; name: string; exportRetentionDays: number | null }): TenantDto {
  return { ...t, effectiveRetentionDays: retentionDaysOf(t) };
}

/** Every tenant. Platform admins. */
export async function listTenants(principal: Principal): Promise<TenantDto[]> {
  requirePlatformAdmin(principal, "The tenant list");
  const tenants = await db().tenant.findMany({ orderBy: { slug: "asc" } });
  return tenants.map(toDto);
}

export const tenantSettingsSchema = z
  .object({
    /** Days an export file is kept; null for the default. New exports only. */
    exportRetentionDays: z
      .number({ error: "must be a number of days or null" })
      .int("must be a whole number of days")
      .min(1, "must be at least 1")
      .max(3650, "must be at most 3650")
      .nullable(),
  })
  .strict();

/** Sets a tenant's export retention (for exports finished from now on). Platform admins; audited. */
export async function updateTenantSettings(principal: Principal, ref: string, body: unknown): Promise<TenantDto> {
  requirePlatformAdmin(principal, "Tenant settings");
  const { exportRetentionDays } = parseOrThrow(tenantSettingsSchema, body);
  const id = (await resolveTenantFor(principal, ref))!;
  const tenant = await db().tenant.update({ where: { id }, data: { exportRetentionDays } });
  await recordAudit(principal, {
    action: "tenant.settings",
    targetType: "tenant",
    targetIds: [id],
    tenantId: id,
    details: { exportRetentionDays },
  });
  return toDto(tenant);
}
