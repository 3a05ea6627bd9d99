/**
 * Extends the leases of running attempts in one statement, each fenced by its
 * token. The answer has an entry for each job whose token still matches, with
 * whether a cancel was requested meanwhile (a backstop for a missed
 * notification); a job left out has another attempt (its lease was lost).
 */
import type { SqlClient } from "../../db";
import { run } from "../../sql";
import * as sql from "./statements";

export type LeaseRenewal = { jobId: string; token: bigint; leaseMs: number };

export async function heartbeatJobs(
  client: SqlClient,
  renewals: readonly LeaseRenewal[],
): Promise<Map<string, { cancelRequested: boolean }>> {
  const { rows } = await run(client, sql.heartbeat, [
    renewals.map((r) => r.jobId),
    renewals.map((r) => r.token.toString()),
    renewals.map((r) => r.leaseMs / 1000),
  ]);
  return new Map(rows.map((r) => [r.id, { cancelRequested: r.cancelRequested }]));
}
