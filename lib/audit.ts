/**
 * The audit log: who did what to which records. Written in the same
 * transaction as the change where there is one.
 */
import type { Principal } from "./auth/principal";
import { db, Prisma } from "./db";

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
  principal: Principal,
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
