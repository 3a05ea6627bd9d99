/**
 * Serialises the creation of one tenant's schedules until the transaction
 * ends, so the per-tenant cap counted after it (count-tenant-schedules.ts)
 * cannot be passed by concurrent creates. An advisory lock, not the tenant's
 * row: locking that row would also hold up every insert that references it.
 */
import type { Prisma } from "../../db";

export async function lockTenantSchedules(tx: Prisma.TransactionClient, tenantId: string): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext('conveyor_schedules'), hashtext(${tenantId}::text))`;
}
