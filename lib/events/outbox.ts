/**
 * Events for the outside world (webhooks), recorded in the transaction of what
 * caused them, so an event is never lost nor told about work that rolled back.
 * Job endings are recorded by a trigger on `jobs`; a workload records its own
 * events (an export's `export.ready`) here. The SQL lives in the webhooks
 * migration (conveyor_webhook_emit).
 */
import type { SqlClient } from "../db";

/** Whether any enabled endpoint of the tenant wants this event (to skip work that only serves it). */
export async function eventWanted(tx: SqlClient, tenantId: string, event: string): Promise<boolean> {
  const { rows } = await tx.query(
    `SELECT 1 FROM webhook_endpoints WHERE tenant_id = $1 AND disabled_at IS NULL AND $2 = ANY (events) LIMIT 1`,
    [tenantId, event],
  );
  return rows.length > 0;
}

/**
 * Records an event for the tenant's endpoints; returns its message id (null: nobody wants it).
 * Files are named by id, never by link: each of `data.files` with a `fileId` gets a fresh
 * `downloadUrl` and its `expiresAt` in every request that delivers the message (and
 * `data.downloadUrl`, when present, the first file's), so the stored message opens nothing.
 */
export async function emitEvent(
  tx: SqlClient,
  e: { tenantId: string; event: string; data: Record<string, unknown>; jobId?: string | null },
): Promise<string | null> {
  const { rows } = await tx.query<{ id: string | null }>(
    "SELECT conveyor_webhook_emit($1::uuid, $2, $3::jsonb, $4::uuid) AS id",
    [e.tenantId, e.event, JSON.stringify(e.data), e.jobId ?? null],
  );
  return rows[0]?.id ?? null;
}
