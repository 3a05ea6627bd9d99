/**
 * The audit log: who did what to which records. Written in the same
 * transaction as the change where there is one.
 */
import { db, Prisma } from "./db";

/** Who acted: a principal (lib/auth) has these fields; the command line acting for nobody yet (the first admin) has no user. */
export type Actor = { userId: string | null; tokenId: string | null; tenantId: string | null };

export type AuditEntry = {
  action: string;
  targetType?: string;
  targetIds?: string[];
  details?: Prisma.InputJsonValue;
  /** Defaults to the principal's tenant. */
  tenantId?: string | null;
};

/** Records one action of a principal. */
export async function recordAudit(
  principal: Actor,
  entry: AuditEntry,
  tx: Prisma.TransactionClient = db(),
): Promise<void> {
  await tx.auditLog.create({
    data: {
      tenantId: entry.tenantId === undefined ? principal.tenantId : entry.tenantId,
      actorUserId: principal.userId,
      actorTokenId: principal.tokenId,
      action: entry.action,
      targetType: entry.targetType ?? null,
      targetIds: entry.targetIds ?? [],
      details: entry.details ?? Prisma.JsonNull,
    },
  });
}

/**
 * Records an action over records of possibly many tenants (a platform admin's
 * bulk action) as one entry per tenant it touched, each under that tenant and
 * naming only its records — so every tenant's log shows what was done to it.
 * With no records, one entry under the principal's tenant.
 */
export async function recordAuditPerTenant(
  principal: Actor,
  entry: Omit<AuditEntry, "targetIds" | "tenantId">,
  targets: { id: string; tenantId: string }[],
  tx: Prisma.TransactionClient = db(),
  detailsFor?: (tenantId: string, ids: string[]) => Prisma.InputJsonValue,
): Promise<void> {
  if (targets.length === 0) return recordAudit(principal, { ...entry, targetIds: [] }, tx);
  const byTenant = new Map<string, string[]>();
  for (const t of targets) byTenant.set(t.tenantId, [...(byTenant.get(t.tenantId) ?? []), t.id]);
  for (const [tenantId, ids] of byTenant) {
    await recordAudit(
      principal,
      { ...entry, tenantId, targetIds: ids, ...(detailsFor ? { details: detailsFor(tenantId, ids) } : {}) },
      tx,
    );
  }
}
