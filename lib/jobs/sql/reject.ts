/**
 * Dead-letters a waiting job whose type no workload registers (it was removed,
 * or this worker runs an older release): it can never run here.
 */
import type { SqlClient } from "../../db";

export async function rejectUnregistered(client: SqlClient, jobId: string, type: string): Promise<void> {
  await client.query(
    `UPDATE jobs SET status = 'failed', error_class = 'permanent', error_message = $2, finished_at = now(),
            updated_at = now()
     WHERE id = $1 AND status IN ('queued', 'retrying')`,
    [jobId, `No task is registered for type ${type}`],
  );
}

/** A job's type, or null when there is no such job. */
export async function jobTypeOf(client: SqlClient, jobId: string): Promise<string | null> {
  const { rows } = await client.query<{ type: string }>("SELECT type FROM jobs WHERE id = $1", [jobId]);
  return rows[0]?.type ?? null;
}
