/**
 * Writes running attempts' progress in one statement, each fenced by its token:
 * `done` never moves backwards (GREATEST); fields left out keep their value.
 * Returns, for each write in order, whether its token still matched.
 */
import type { SqlClient } from "../../db";
import { run } from "../../sql";
import * as sql from "./statements";
import type { ProgressUpdate } from "../task";

export type ProgressWrite = { jobId: string; token: bigint; update: ProgressUpdate };

const int8 = (n: number | null | undefined) => (n === null || n === undefined ? null : String(Math.floor(n)));

export async function writeProgress(client: SqlClient, writes: readonly ProgressWrite[]): Promise<boolean[]> {
  // node-postgres sends a null element as NULL (a field left out); the generated types know only the element's.
  const { rows } = await run(client, sql.writeProgress, [
    writes.map((w) => w.jobId),
    writes.map((w) => w.token.toString()),
    writes.map((w) => int8(w.update.done ?? 0)!),
    writes.map((w) => w.update.total !== undefined),
    writes.map((w) => int8(w.update.total)) as string[],
    writes.map((w) => w.update.unit ?? null) as string[],
    writes.map((w) => w.update.stage ?? null) as string[],
    writes.map((w) => (w.update.detail === undefined ? null : JSON.stringify(w.update.detail))),
    writes.map((w) => int8(w.update.bytes)) as string[],
  ]);
  const held = new Set(rows.map((r) => r.id));
  return writes.map((w) => held.has(w.jobId));
}
