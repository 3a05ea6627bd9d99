/**
 * Claims a job for one attempt, in one statement: status `running`, a new
 * fencing token, the lease, and the attempt row. A job woken after its
 * children ended resumes its attempt (same number, `resume` + 1) instead of
 * starting a new one. Only an admitted, unpaused, uncancelled job is claimed,
 * so a stale or duplicate dispatch is harmless: it claims nothing. The
 * attempt row keeps the job's run_at as `ready_at` (start latency).
 */
import type { SqlClient } from "../../db";
import { run } from "../../sql";
import * as sql from "./statements";

export type ClaimedJob = {
  id: string;
  tenantId: string;
  type: string;
  input: unknown;
  attempt: number;
  resume: number;
  maxAttempts: number;
  fencingToken: bigint;
  createdById: string | null;
  priority: number;
  checkpoint: unknown;
  attemptId: bigint;
  queue: string;
  /** The W3C trace context stored when the job was made (lib/tracing.ts), or null. */
  traceContext: unknown;
};

export type ClaimRequest = { jobId: string; type: string; workerId: string; leaseMs: number };

/** Claims one job (see claimJobs). */
export async function claimJob(client: SqlClient, opts: ClaimRequest): Promise<ClaimedJob | null> {
  return (await claimJobs(client, [opts]))[0]!;
}

/**
 * Claims several jobs in one statement (the runner's batches): each request's
 * result in its place, null for a job that could not be claimed. A job asked
 * for twice in one batch (a duplicate dispatch) is claimed for its first
 * request only.
 *
 * The status checks compare `status::text`: said as `status IN (…)`, they imply
 * the predicates of the partial indexes over waiting jobs, and a planner
 * without statistics (a new table, autovacuum off) then scans a whole waiting
 * index instead of looking the ids up in the primary key.
 */
export async function claimJobs(client: SqlClient, requests: ClaimRequest[]): Promise<(ClaimedJob | null)[]> {
  const first = new Map<string, number>();
  requests.forEach((r, i) => first.has(r.jobId) || first.set(r.jobId, i));
  const unique = [...first.keys()].map((id) => requests[first.get(id)!]!);
  const { rows } = await run(client, sql.claim, [
    unique.map((r) => r.jobId),
    unique.map((r) => r.type),
    unique.map((r) => r.workerId),
    unique.map((r) => r.leaseMs / 1000),
  ]);
  const byId = new Map(rows.map((row) => [row.id.toLowerCase(), row]));
  return requests.map((r, i) => {
    const row = first.get(r.jobId) === i ? byId.get(r.jobId.toLowerCase()) : undefined;
    return row ? { ...row, fencingToken: BigInt(row.fencingToken), attemptId: BigInt(row.attemptId) } : null;
  });
}
