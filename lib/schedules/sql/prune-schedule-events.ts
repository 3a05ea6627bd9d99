/**
 * A tenant's schedule events (missed, skipped, buffered occurrences and runs
 * cancelled by a newer one) older than its job retention: the runs they stand
 * beside are pruned then too.
 */
import type { Prisma } from "../../db";

export function pruneScheduleEvents(
  tx: Prisma.TransactionClient,
  tenantId: string,
  cutoff: Date,
  limit: number,
): Promise<number> {
  return tx.$executeRaw`
    DELETE FROM schedule_events WHERE id IN (
      SELECT e.id FROM schedule_events e JOIN schedules s ON s.id = e.schedule_id
       WHERE s.tenant_id = ${tenantId}::uuid AND e.at < ${cutoff}
       LIMIT ${limit} FOR UPDATE OF e SKIP LOCKED)`;
}
