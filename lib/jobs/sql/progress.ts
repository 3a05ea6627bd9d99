/**
 * Writes a running attempt's progress, fenced by its token: `done` never moves
 * backwards (GREATEST); fields left out keep their value. False when the token
 * no longer matches.
 */
import { prepared, type SqlClient } from "../../db";
import type { ProgressUpdate } from "../task";

const int8 = (n: number | null | undefined) => (n === null || n === undefined ? null : String(Math.floor(n)));

export async function writeProgress(
  client: SqlClient,
  jobId: string,
  token: bigint,
  u: ProgressUpdate,
): Promise<boolean> {
  const { rowCount } = await client.query({
    ...prepared(`UPDATE jobs SET
       progress_done = GREATEST(progress_done, $3::bigint),
       progress_total = CASE WHEN $4::boolean THEN $5::bigint ELSE progress_total END,
       progress_unit = coalesce($6, progress_unit),
       progress_stage = coalesce($7, progress_stage),
       progress_detail = coalesce($8::jsonb, progress_detail),
       progress_bytes = coalesce($9::bigint, progress_bytes),
       updated_at = now()
     WHERE id = $1 AND fencing_token = $2 AND status = 'running'`),
    values: [
      jobId,
      token.toString(),
      int8(u.done ?? 0),
      u.total !== undefined,
      int8(u.total),
      u.unit ?? null,
      u.stage ?? null,
      u.detail === undefined ? null : JSON.stringify(u.detail),
      int8(u.bytes),
    ],
  });
  return rowCount === 1;
}
