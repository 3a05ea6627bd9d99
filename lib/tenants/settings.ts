/**
 * Tenants as platform admins manage them: the list, and each tenant's export
 * retention (how long its export files are kept; EXPORT_RETENTION_DAYS when unset),
 * quotas, and retention of jobs, dead letters and audit entries (lib/retention).
 */
import { z } from "zod";
import { recordAudit } from "../audit";
import { requirePlatformAdmin, resolveTenantFor } from "../auth/authorize";
import type { Principal } from "../auth/principal";
import { db } from "../db";
import { env } from "../env";
import { AppError, parseOrThrow } from "../errors";
import { effectiveQuotas, type TenantQuotas } from "./quotas";
import { effectiveRetention, type RetentionDays } from "./retention";

export type TenantDto = {
  id: string;
  slug: string;
  name: string;
  /** The tenant's own retention, or null for the default. */
  exportRetentionDays: number | null;
  /** What applies: its own or the default. */
  effectiveRetentionDays: number;
  /** The tenant's own quotas (null: the default) and those that apply. */
  quotas: { jobsPerUser: number | null; jobsPerTenant: number | null; exportBytes: number | null };
  effectiveQuotas: TenantQuotas;
  /** The tenant's own retention of finished jobs, dead letters and audit entries, in days (null: the default). */
  retention: { jobDays: number | null; deadLetterDays: number | null; auditDays: number | null };
  /** What the pruner applies (lib/retention). */
  effectiveRetention: RetentionDays;
};

/** How long a tenant's export files are kept: its own setting, or EXPORT_RETENTION_DAYS. */
export function retentionDaysOf(tenant: { exportRetentionDays: number | null }): number {
  return tenant.exportRetentionDays ?? env().EXPORT_RETENTION_DAYS;
}

type TenantRow = {
  id: string;
  slug: string;
  name: string;
  exportRetentionDays: number | null;
  quotaJobsPerUser: number | null;
  quotaJobsPerTenant: number | null;
  quotaExportBytes: bigint | null;
  jobRetentionDays: number | null;
  deadLetterRetentionDays: number | null;
  auditRetentionDays: number | null;
};

function toDto(t: TenantRow): TenantDto {
  return {
    id: t.id,
    slug: t.slug,
    name: t.name,
    exportRetentionDays: t.exportRetentionDays,
    effectiveRetentionDays: retentionDaysOf(t),
    quotas: {
      jobsPerUser: t.quotaJobsPerUser,
      jobsPerTenant: t.quotaJobsPerTenant,
      exportBytes: t.quotaExportBytes === null ? null : Number(t.quotaExportBytes),
    },
    effectiveQuotas: effectiveQuotas(t),
    retention: {
      jobDays: t.jobRetentionDays,
      deadLetterDays: t.deadLetterRetentionDays,
      auditDays: t.auditRetentionDays,
    },
    effectiveRetention: effectiveRetention(t),
  };
}

/** Every tenant. Platform admins. */
export async function listTenants(principal: Principal): Promise<TenantDto[]> {
  requirePlatformAdmin(principal, "The tenant list");
  const tenants = await db().tenant.findMany({ orderBy: { slug: "asc" } });
  return tenants.map(toDto);
}

const count = (max: number) =>
  z
    .number({ error: "must be a whole number or null" })
    .int("must be a whole number")
    .min(1, "must be at least 1")
    .max(max, `must be at most ${max}`)
    .nullable();

const days = () =>
  z
    .number({ error: "must be a number of days or null" })
    .int("must be a whole number of days")
    .min(1, "must be at least 1")
    .max(3650, "must be at most 3650")
    .nullable();

/** PATCH body: every field optional; null sets the platform default. */
export const tenantSettingsSchema = z
  .object({
    /** Days an export file is kept; null for the default. New exports only. */
    exportRetentionDays: z
      .number({ error: "must be a number of days or null" })
      .int("must be a whole number of days")
      .min(1, "must be at least 1")
      .max(3650, "must be at most 3650")
      .nullable(),
    /** Unfinished jobs one user of the tenant may have. */
    quotaJobsPerUser: count(10_000_000),
    /** Unfinished jobs the tenant may have. */
    quotaJobsPerTenant: count(10_000_000),
    /** Bytes of export files the tenant may keep. */
    quotaExportBytes: z
      .number({ error: "must be a whole number of bytes or null" })
      .int("must be a whole number of bytes")
      .min(0, "must be at least 0")
      .max(Number.MAX_SAFE_INTEGER)
      .nullable(),
    /** Days a finished job is kept with its attempts and transitions; null for JOB_RETENTION_DAYS. */
    jobRetentionDays: days(),
    /** Days a dead letter is kept; null for DEAD_LETTER_RETENTION_DAYS. */
    deadLetterRetentionDays: days(),
    /** Days an audit entry is kept; null for AUDIT_RETENTION_DAYS. */
    auditRetentionDays: days(),
  })
  .partial()
  .strict()
  .refine((v) => Object.keys(v).length > 0, { message: "give at least one setting", path: ["(body)"] });

/**
 * Sets a tenant's retention and quotas (export retention: for exports finished from now on; job,
 * dead-letter and audit retention: the pruner's next tick). Platform admins; audited.
 */
export async function updateTenantSettings(principal: Principal, ref: string, body: unknown): Promise<TenantDto> {
  requirePlatformAdmin(principal, "Tenant settings");
  const changes = parseOrThrow(tenantSettingsSchema, body);
  const id = (await resolveTenantFor(principal, ref))!;
  const tenant = await db().tenant.update({
    where: { id },
    data: {
      ...changes,
      ...(changes.quotaExportBytes !== undefined
        ? { quotaExportBytes: changes.quotaExportBytes === null ? null : BigInt(changes.quotaExportBytes) }
        : {}),
    },
  });
  await recordAudit(principal, {
    action: "tenant.settings",
    targetType: "tenant",
    targetIds: [id],
    tenantId: id,
    details: changes,
  });
  return toDto(tenant);
}

export const createTenantSchema = z
  .object({
    slug: z
      .string({ error: "must be a text" })
      .trim()
      .toLowerCase()
      .regex(/^[a-z0-9][a-z0-9-]{1,38}[a-z0-9]$/, "must be 3 to 40 lowercase letters, digits or dashes"),
    name: z
      .string({ error: "must be a text" })
      .trim()
      .min(1, "must not be empty")
      .max(200, "must be at most 200 characters"),
  })
  .strict();

/** Creates a tenant (409 when the slug is taken). Platform admins; audited. */
export async function createTenant(principal: Principal, body: unknown): Promise<TenantDto> {
  requirePlatformAdmin(principal, "Creating a tenant");
  const { slug, name } = parseOrThrow(createTenantSchema, body);
  const [row] = await db().$queryRaw<{ id: string }[]>`
    INSERT INTO tenants (id, slug, name) VALUES (gen_random_uuid(), ${slug}, ${name})
    ON CONFLICT (slug) DO NOTHING RETURNING id`;
  if (!row) throw new AppError("conflict", `A tenant with slug ${slug} already exists`);
  await recordAudit(principal, {
    action: "tenant.create",
    targetType: "tenant",
    targetIds: [row.id],
    tenantId: row.id,
    details: { slug, name },
  });
  return toDto(await db().tenant.findUniqueOrThrow({ where: { id: row.id } }));
}
