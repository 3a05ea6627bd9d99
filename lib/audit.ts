/**
 * The audit log: who did what to which records. Written in the same
 * transaction as the change where there is one.
 */
import { db, Prisma } from "./db";

/** Who acted: a principal (lib/auth) has these fields. */
export type Actor = { userId: string; tokenId: string | null; tenantId: string | null };

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
