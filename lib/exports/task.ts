/**
 * The `export` task: one file for a small export (./stream.ts), or a split
 * into parts gathered into a zip for a large one (./parts.ts); a replay of a
 * dead split export repairs it (./repair.ts).
 */
import { defineTask } from "../jobs/task";
import { announceExportReady } from "./announce";
import { attemptFileKey, EXPORT_RETRY, recordExportFile, type ExportResult } from "./files";
import { assembleParts, fanOutIfLarge, type PartsCheckpoint } from "./parts";
import { repairCheckpoint, replaceRepairedFiles, startRepair, type RepairCheckpoint } from "./repair";
import { exportRequestSchema, exportRunInput, scheduledExportSchema, type ScheduledExport } from "./schema";
import { readSegmentsCheckpoint, exportToStorage } from "./segments";
import { exportContentType, exportFileName } from "./stream";

export const exportTask = defineTask({
  type: "export",
  queue: "interactive",
  inputSchema: exportRequestSchema,
  retry: EXPORT_RETRY,
  timeoutMs: 60 * 60 * 1000,
  leaseMs: 30_000,
  schedulable: {
    inputSchema: scheduledExportSchema,
    runInput: (input, run) => exportRunInput(input as ScheduledExport, run),
    // A scheduled export stores a file as a requested one does: refused while the tenant keeps its quota.
    exportBytes: true,
  },
  async handler(ctx): Promise<ExportResult> {
    const { job, input } = ctx;
    // Resumed after its parts ended: gather them. Otherwise split it if it is large (this never returns
    // then) — unless an earlier attempt already wrote part of it as one file: that file continues.
    const checkpoint = ctx.lastCheckpoint as PartsCheckpoint | RepairCheckpoint | null;
    if (checkpoint?.phase === "parts") return assembleParts(ctx, checkpoint);
    // A replay of a dead split export: adopt its finished parts, run the others again.
    if (checkpoint?.phase === "repair") return startRepair(ctx, checkpoint);
    if (!readSegmentsCheckpoint(ctx.lastCheckpoint, undefined, `[task:export] job ${job.id}`)) await fanOutIfLarge(ctx);

    const name = exportFileName(job.id, input);
    const { key, rows, size, sha256, resumedFrom } = await exportToStorage(ctx, {
      request: input,
      key: attemptFileKey(job, name),
    });
    ctx.progress({ done: rows, total: rows, stage: "done" });
    return {
      rows,
      format: input.format,
      compression: input.compression,
      files: [{ name, key, size, sha256, rows, contentType: exportContentType(input) }],
      resumedFrom,
    };
  },
  // A replay repairs a split export: only its dead parts run again (./repair.ts).
  replayCheckpoint: repairCheckpoint,
  // The file becomes downloadable in the same transaction that marks the job succeeded;
  // a repair's archive replaces the partial files of the exports it repairs there too.
  async commit(tx, job, result) {
    for (const f of result.files) await recordExportFile(tx, job, f);
    if (result.repair) await replaceRepairedFiles(tx, job, result.repair);
    await announceExportReady(tx, job);
  },
});
