/**
 * The quota gate of a schedule's runs (`conveyor_gate_scheduled_runs`): each
 * run is checked against its owner's and its tenant's quotas of unfinished
 * jobs (and, with `exportBytes`, the tenant's stored bytes), counting the runs
 * let through before it. It takes the tenants' enqueue locks, held to the
 * commit of the caller's transaction, which must insert the runs let through.
 * A run that already exists passes (its INSERT does nothing).
 */
import type { SqlClient } from "../../db";

export type GatedRun = {
  tenantId: string;
  createdById: string | null;
  exportBytes: boolean;
  scheduleId: string;
  scheduledFor: Date;
};

/** What refused a run: the quota, its limit and its use then. */
export type RunRefusal = { quota: "jobs_per_user" | "jobs_per_tenant" | "export_bytes"; limit: number; used: number };

/** Per run, in order: null (it may be made) or the quota's refusal. */
export async function gateScheduledRuns(
  client: SqlClient,
  runs: GatedRun[],
  limits: { perUser: number; perTenant: number; exportBytes: number },
): Promise<(RunRefusal | null)[]> {
  if (!runs.length) return [];
  const { rows } = await client.query<{ verdicts: (RunRefusal | null)[] }>(
    `SELECT conveyor_gate_scheduled_runs($1::uuid[], $2::uuid[], $3::boolean[], $4::uuid[], $5::timestamptz[],
                                         $6::int, $7::int, $8::bigint) AS verdicts`,
    [
      runs.map((r) => r.tenantId),
      runs.map((r) => r.createdById),
      runs.map((r) => r.exportBytes),
      runs.map((r) => r.scheduleId),
      runs.map((r) => r.scheduledFor),
      limits.perUser,
      limits.perTenant,
      limits.exportBytes,
    ],
  );
  return rows[0]!.verdicts.map((v) => (v ? { quota: v.quota, limit: Number(v.limit), used: Number(v.used) } : null));
}
