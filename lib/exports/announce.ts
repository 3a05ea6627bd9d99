/** The `export.ready` webhook event, recorded with the export's files. */
import type { SqlClient } from "../db";
import { emitEvent, eventWanted } from "../events/outbox";
import type { JobInfo } from "../jobs/task";

/**
 * Tells the tenant's endpoints that want `export.ready` (in the transaction
 * that records the export's files): the files, each by its id. The message
 * stored holds no link; each request that delivers it carries fresh download
 * links that need no sign-in (lib/events/outbox.ts, `files`).
 */
export async function announceExportReady(tx: SqlClient, job: Pick<JobInfo, "id" | "tenantId">): Promise<void> {
  if (!(await eventWanted(tx, job.tenantId, "export.ready"))) return;
  const { rows: files } = await tx.query<{ id: string; name: string; size: string; rows: string | null }>(
    `SELECT id, name, size::text, row_count::text AS rows FROM export_files WHERE job_id = $1 ORDER BY name`,
    [job.id],
  );
  await emitEvent(tx, {
    tenantId: job.tenantId,
    event: "export.ready",
    data: {
      jobId: job.id,
      downloadUrl: null,
      files: files.map((f) => ({
        fileId: f.id,
        name: f.name,
        bytes: Number(f.size),
        rows: f.rows === null ? null : Number(f.rows),
      })),
    },
    jobId: job.id,
  });
}
