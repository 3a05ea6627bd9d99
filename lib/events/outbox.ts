/**
 * Events for the outside world, recorded in the transaction of what caused them, so an event is
 * never lost nor told about work that rolled back. The engine records job endings (`job.succeeded`,
 * `job.failed`, `job.cancelled` of a top-level job: the jobs_tell_ended trigger); a workload records its
 * own events (an export's `export.ready`) here. Each event goes to every consumer registered in
 * `event_consumers` (a workload's two SQL functions, e.g. webhooks' deliveries): this module knows
 * none of them (prisma/sql/functions/conveyor_event_emit.sql).
 */
import type { SqlClient } from "../db";

/** Whether any consumer wants this event of the tenant (to skip work that only serves it). */
export async function eventWanted(tx: SqlClient, tenantId: string, event: string): Promise<boolean> {
  const { rows } = await tx.query<{ wanted: boolean }>("SELECT conveyor_event_wanted($1::uuid, $2) AS wanted", [
    tenantId,
    event,
  ]);
  return rows[0]?.wanted === true;
}

/** Records an event of the tenant for every consumer, in the caller's transaction. */
export async function emitEvent(
  tx: SqlClient,
  e: { tenantId: string; event: string; data: Record<string, unknown>; jobId?: string | null },
): Promise<void> {
  await tx.query("SELECT conveyor_event_emit($1::uuid, $2, $3::jsonb, $4::uuid)", [
    e.tenantId,
    e.event,
    JSON.stringify(e.data),
    e.jobId ?? null,
  ]);
}
