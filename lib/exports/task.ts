/**
 * The `export` task: one file for a small export (lib/exports/stream.ts), or a
 * split into parts gathered into a zip for a large one (lib/exports/parts.ts).
 */
import { retentionDaysOf } from "../ops/tenants";
import { defineTask } from "../jobs/task";
import { assembleParts, fanOutIfLarge, type PartsCheckpoint } from "./parts";
import { exportRequestSchema, type ExportRequest } from "./schema";
import { exportContentType, exportFileName, exportToStorage } from "./stream";

export type ExportResult = {
  rows: number;
  format: ExportRequest["format"];
  compression: ExportRequest["compression"];
  files: { name: string; key: string; size: number; sha256: string; rows: number; contentType: string }[];
};

export const exportTask = defineTask({
  type: "export",
  queue: "interactive",
  inputSchema: exportRequestSchema,
  retry: { maxAttempts: 3, initialBackoffMs: 2_000, maxBackoffMs: 60_000, multiplier: 4, jitter: "full" },
  timeoutMs: 60 * 60 * 1000,
  leaseMs: 30_000,
  async handler(ctx): Promise<ExportResult> {
    const { job, input } = ctx;
    // Woken after its parts ended: gather them. Otherwise split it if it is large (this never returns then).
    const checkpoint = ctx.lastCheckpoint as PartsCheckpoint | null;
    if (checkpoint?.phase === "parts") return assembleParts(ctx, checkpoint);
    await fanOutIfLarge(ctx);

    const name = exportFileName(job.id, input);
    // One path per attempt: a stale attempt can never overwrite or delete the winner's file.
    const key = `${job.tenantId}/${job.id}/${job.attempt}/${name}`;
    const { rows, size, sha256 } = await exportToStorage(ctx, {
      request: input,
      key,
      message: `Exporting ${input.dataset}`,
    });
    ctx.progress({ done: rows, total: rows, stage: "done", message: `${rows.toLocaleString("en-US")} rows` });
    return {
      rows,
      format: input.format,
      compression: input.compression,
      files: [{ name, key, size, sha256, rows, contentType: exportContentType(input) }],
    };
  },
  // The file becomes downloadable in the same transaction that marks the job succeeded.
  async commit(tx, job, result) {
    const tenant = await tx.tenant.findUniqueOrThrow({ where: { id: job.tenantId } });
    const retentionDays = retentionDaysOf(tenant);
    const expiresAt = new Date(Date.now() + retentionDays * 86_400_000);
    for (const f of result.files) {
      const data = {
        size: BigInt(f.size),
        sha256: f.sha256,
        rowCount: BigInt(f.rows),
        storageKey: f.key,
        contentType: f.contentType,
        expiresAt,
      };
      await tx.exportFile.upsert({
        where: { jobId_name: { jobId: job.id, name: f.name } },
        create: { jobId: job.id, tenantId: job.tenantId, name: f.name, ...data },
        update: data,
      });
    }
  },
});
