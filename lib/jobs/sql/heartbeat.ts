/**
 * Extends the lease of a running attempt, fenced by its token. Null when the
 * token no longer matches (another attempt owns the job); otherwise whether a
 * cancel was requested meanwhile (a backstop for a missed notification).
 */
import { prepared, type SqlClient } from "../../db";

export async function heartbeatJob(
  client: SqlClient,
  opts: { jobId: string; token: bigint; leaseMs: number },
): Promise<{ cancelRequested: boolean } | null> {
  const { rows } = await client.query<{ cancelRequested: boolean }>({
    ...prepared(`UPDATE jobs SET heartbeat_at = now(), lease_expires_at = now() + make_interval(secs => $3::float8)
     WHERE id = $1 AND fencing_token = $2 AND status = 'running'
     RETURNING cancel_requested_at IS NOT NULL AS "cancelRequested"`),
    values: [opts.jobId, opts.token.toString(), opts.leaseMs / 1000],
  });
  return rows[0] ?? null;
}
