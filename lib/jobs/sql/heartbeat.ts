/**
 * Extends the lease of a running attempt, fenced by its token. Null when the
 * token no longer matches (another attempt owns the job); otherwise whether a
 * cancel was requested meanwhile (a backstop for a missed notification).
 */
import type { SqlClient } from "../../db";
import { run } from "../../sql";
import * as sql from "./statements";

export async function heartbeatJob(
  client: SqlClient,
  opts: { jobId: string; token: bigint; leaseMs: number },
): Promise<{ cancelRequested: boolean } | null> {
  const { rows } = await run(client, sql.heartbeat, [opts.jobId, opts.token.toString(), opts.leaseMs / 1000]);
  return rows[0] ?? null;
}
