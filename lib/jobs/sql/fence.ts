/**
 * Locks a running attempt's job row inside a transaction, if the attempt still
 * holds it (its fencing token matches): every write made in that transaction
 * afterwards is as fenced as the attempt's own. False when another attempt
 * owns the job.
 */
import type { SqlClient } from "../../db";

export async function holdFence(tx: SqlClient, jobId: string, token: bigint): Promise<boolean> {
  const { rowCount } = await tx.query(
    `SELECT 1 FROM jobs WHERE id = $1 AND fencing_token = $2 AND status = 'running' FOR UPDATE`,
    [jobId, token.toString()],
  );
  return rowCount === 1;
}
