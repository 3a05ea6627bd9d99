/**
 * How many schedules a tenant has. Its own statement after the lock
 * (lock-tenant-schedules.ts): under READ COMMITTED a statement's snapshot is
 * taken when it starts, so only a count begun after the lock was granted sees
 * the schedules the lock's previous holder committed.
 */
import type { Prisma } from "../../db";

export async function countTenantSchedules(tx: Prisma.TransactionClient, tenantId: string): Promise<number> {
  const [row] = await tx.$queryRaw<{ n: number }[]>`
    SELECT count(*)::int AS n FROM schedules WHERE tenant_id = ${tenantId}::uuid`;
  return row?.n ?? 0;
}
