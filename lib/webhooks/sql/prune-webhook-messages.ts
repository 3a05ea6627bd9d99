/**
 * Webhook messages a tenant no longer needs: older than its job retention, with
 * no delivery left (each delivery goes with its job, the job, by cascade, or
 * with its endpoint). A message with a delivery still on record stays, so a
 * dead delivery can still be replayed.
 */
import type { Prisma } from "../../db";

export function pruneWebhookMessages(
  tx: Prisma.TransactionClient,
  tenantId: string,
  cutoff: Date,
  limit: number,
): Promise<number> {
  return tx.$executeRaw`
    DELETE FROM webhook_messages WHERE id IN (
      SELECT m.id FROM webhook_messages m
       WHERE m.tenant_id = ${tenantId}::uuid AND m.created_at < ${cutoff}
         AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.message_id = m.id)
       ORDER BY m.created_at LIMIT ${limit} FOR UPDATE SKIP LOCKED)`;
}
