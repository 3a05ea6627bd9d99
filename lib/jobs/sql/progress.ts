/**
 * Writes a running attempt's progress, fenced by its token: `done` never moves
 * backwards (GREATEST); fields left out keep their value. False when the token
 * no longer matches.
 */
import type { SqlClient } from "../../db";
import { run } from "../../sql";
import * as sql from "./statements";
import type { ProgressUpdate } from "../task";

const int8 = (n: number | null | undefined) => (n === null || n === undefined ? null : String(Math.floor(n)));

export async function writeProgress(
  client: SqlClient,
  jobId: string,
  token: bigint,
  u: ProgressUpdate,
): Promise<boolean> {
  const { rowCount } = await run(client, sql.writeProgress, [
    jobId,
    token.toString(),
    int8(u.done ?? 0),
    u.total !== undefined,
    int8(u.total),
    u.unit ?? null,
    u.stage ?? null,
    u.detail === undefined ? null : JSON.stringify(u.detail),
    int8(u.bytes),
  ]);
  return rowCount === 1;
}
