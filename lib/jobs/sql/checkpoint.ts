/** Saves a running attempt's checkpoint, fenced by its token. False when the token no longer matches. */
import type { SqlClient } from "../../db";

export async function saveCheckpoint(
  client: SqlClient,
  jobId: string,
  token: bigint,
  value: unknown,
): Promise<boolean> {
  const { rowCount } = await client.query(
    `UPDATE jobs SET checkpoint = $3::jsonb, updated_at = now()
     WHERE id = $1 AND fencing_token = $2 AND status = 'running'`,
    [jobId, token.toString(), JSON.stringify(value ?? null)],
  );
  return rowCount === 1;
}
