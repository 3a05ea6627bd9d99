/**
 * Cancels open jobs on the system's behalf (a schedule's `cancel_other`
 * overlap rule), as a person's cancel does (lib/jobs/actions.ts): a waiting
 * job ends `cancelled` at once and its dispatch is removed; a running one gets
 * the request, which reaches its worker and aborts the attempt.
 */
import type { SqlClient } from "../../db";

export async function requestCancel(client: SqlClient, jobIds: string[], reason: string): Promise<string[]> {
  if (!jobIds.length) return [];
  const { rows } = await client.query<{ id: string; was: string }>(
    `WITH j AS (SELECT id, status FROM jobs
                 WHERE id = ANY($1::uuid[]) AND status IN ('scheduled', 'queued', 'retrying', 'running')
                   AND cancel_requested_at IS NULL
                 FOR UPDATE)
     UPDATE jobs SET cancel_requested_at = now(), cancel_reason = $2, updated_at = now(),
            status = CASE WHEN j.status = 'running' THEN jobs.status ELSE 'cancelled'::job_status END,
            finished_at = CASE WHEN j.status = 'running' THEN jobs.finished_at ELSE now() END,
            error_class = CASE WHEN j.status = 'running' THEN jobs.error_class ELSE 'cancelled' END,
            error_message = CASE WHEN j.status = 'running' THEN jobs.error_message ELSE $2 END
       FROM j WHERE jobs.id = j.id
     RETURNING jobs.id, j.status::text AS was`,
    [jobIds, reason],
  );
  const waiting = rows.filter((r) => r.was !== "running").map((r) => r.id);
  if (waiting.length) {
    await client.query("SELECT graphile_worker.remove_job(id::text) FROM unnest($1::uuid[]) AS id", [waiting]);
  }
  return rows.map((r) => r.id);
}
