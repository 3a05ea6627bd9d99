/**
 * Dead-letters a waiting job whose type no workload registers (it was removed,
 * or this worker runs an older release): it can never run here.
 */
import type { SqlClient } from "../../db";
import { run } from "../../sql";
import * as sql from "./statements";

export async function rejectUnregistered(client: SqlClient, jobId: string, type: string): Promise<void> {
  await run(client, sql.failWaiting, [[jobId], `No task is registered for type ${type}`, false]);
}

/** A job's type, or null when there is no such job. */
export async function jobTypeOf(client: SqlClient, jobId: string): Promise<string | null> {
  const { rows } = await run(client, sql.jobType, [jobId]);
  return rows[0]?.type ?? null;
}
