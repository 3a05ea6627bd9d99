/** Saves a running attempt's checkpoint, fenced by its token. False when the token no longer matches. */
import type { SqlClient } from "../../db";
import { run } from "../../sql";
import * as sql from "./statements";

export async function saveCheckpoint(
  client: SqlClient,
  jobId: string,
  token: bigint,
  value: unknown,
): Promise<boolean> {
  const { rowCount } = await run(client, sql.saveCheckpoint, [jobId, token.toString(), JSON.stringify(value ?? null)]);
  return rowCount === 1;
}
