/**
 * Locks a running attempt's job row inside a transaction, if the attempt still
 * holds it (its fencing token matches): every write made in that transaction
 * afterwards is as fenced as the attempt's own. False when another attempt
 * owns the job.
 */
import type { SqlClient } from "../../db";
import { run } from "../../sql";
import * as sql from "./statements";

export async function holdFence(tx: SqlClient, jobId: string, token: bigint): Promise<boolean> {
  const { rowCount } = await run(tx, sql.holdFence, [jobId, token.toString()]);
  return rowCount === 1;
}
