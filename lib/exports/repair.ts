/**
 * Repairing a split export that ended dead (issue 35). Its replay — a new job
 * linked to it (`replay_of_id`), as every replay is — starts from
 * `repairCheckpoint`: it adopts the finished parts whose files are still
 * stored, runs again only the parts that did not finish (or whose files are
 * gone), and assembles the complete archive (./parts.ts `assembleParts`). When
 * it succeeds, its archive replaces the partial file of every export it
 * repairs: each old file names its replacement (`replaced_by_id`), downloads
 * and links that led to it lead to the new file, and an audit entry on the old
 * export says it was repaired.
 */
import { pool, type SqlClient } from "../db";
import { run } from "../sql";
import { PermanentError } from "../jobs/errors";
import type { JobContext, JobInfo } from "../jobs/task";
import { storage } from "../storage";
import type { IdRange } from "./datasets";
import type { ExportResult } from "./files";
import { assembleParts, exportPartTask, type PartResult, type PartsCheckpoint } from "./parts";
import type { ExportRequest } from "./schema";
import { auditRepaired, repairChildren, replaceRepairedFiles as replaceRepairedFilesSql } from "./sql/statements";

/** Where a repair starts: the export whose parts it adopts, and what that export had adopted itself. */
export type RepairCheckpoint = {
  phase: "repair";
  /** The export it repairs (the one replayed). */
  of: string;
  parts: number;
  snapshot: PartsCheckpoint["snapshot"];
  /** Parts that export had adopted from an earlier one (a repair of a repair). */
  adopted: PartResult[];
};

/**
 * The export task's `replayCheckpoint`: a split export (its parts planned) is
 * repaired; one that never split, or was planned before repairs existed (no
 * `exportId` in its checkpoint), is run again from the start (null).
 */
export function repairCheckpoint(value: unknown): RepairCheckpoint | null {
  const cp = value as {
    phase?: string;
    exportId?: unknown;
    parts?: unknown;
    snapshot?: PartsCheckpoint["snapshot"];
    adopted?: PartResult[];
  } | null;
  // A repair that ended before it fanned out: its replay repairs the same export.
  if (cp?.phase === "repair") return cp as RepairCheckpoint;
  if (cp?.phase !== "parts" || typeof cp.exportId !== "string" || typeof cp.parts !== "number" || !cp.snapshot) {
    return null;
  }
  return { phase: "repair", of: cp.exportId, parts: cp.parts, snapshot: cp.snapshot, adopted: cp.adopted ?? [] };
}

/** Whether a finished part's file is still stored whole (the cleanup may have removed it). */
async function isStored(p: PartResult): Promise<boolean> {
  const opened = await storage().open(p.key);
  if (!opened) return false;
  opened.stream.destroy();
  return opened.size === p.size;
}

/**
 * The first run of a repair: sorts the repaired export's parts into those it
 * adopts (finished, file stored) and those it runs again, then waits for the
 * latter as its own parts (files under its own id) — or, with none to run,
 * assembles at once. Its checkpoint keeps the adopted parts for the assembly
 * and for a repair of this repair.
 */
export async function startRepair(ctx: JobContext<ExportRequest>, cp: RepairCheckpoint): Promise<ExportResult> {
  const { job, input } = ctx;
  const { rows: children } = await run(pool(), repairChildren, [cp.of]);
  const ranges = new Map<number, IdRange>();
  const finished = new Map<number, PartResult>();
  for (const p of cp.adopted) {
    ranges.set(p.part, p.range);
    finished.set(p.part, p);
  }
  for (const c of children) {
    // Read loosely: a part may have died of an input that no longer parses.
    const spec = c.input as { part?: unknown; range?: IdRange } | null;
    if (typeof spec?.part !== "number" || !spec.range) continue;
    ranges.set(spec.part, spec.range);
    const result = c.result as (PartResult & { fileDeleted?: boolean }) | null;
    if (c.status === "succeeded" && result?.key && !result.fileDeleted) finished.set(spec.part, result);
  }
  if (ranges.size !== cp.parts) {
    throw new PermanentError(
      `Cannot repair export ${cp.of}: ${cp.parts - ranges.size} of its ${cp.parts} parts are not on record`,
    );
  }
  const adopted: PartResult[] = [];
  for (const p of finished.values()) if (await isStored(p)) adopted.push(p);
  const kept = new Set(adopted.map((p) => p.part));
  const rerun = [...ranges].filter(([part]) => !kept.has(part)).sort(([a], [b]) => a - b);
  const next: PartsCheckpoint = {
    phase: "parts",
    parts: cp.parts,
    snapshot: cp.snapshot,
    exportId: job.id,
    adopted: adopted.sort((a, b) => a.part - b.part),
    repairOf: cp.of,
  };
  ctx.progress({
    done: 0,
    unit: "rows",
    stage: "repairing",
    detail: { parts: rerun.length, adopted: adopted.length },
  });
  if (rerun.length === 0) {
    await ctx.checkpoint(next);
    return assembleParts(ctx, next);
  }
  return ctx.waitForChildren(
    rerun.map(([part, range]) => ({
      type: exportPartTask.type,
      input: { exportId: job.id, request: input, range, part, parts: cp.parts },
      // Its place in the export it repairs.
      index: part - 1,
    })),
    next,
  );
}

/**
 * In the transaction that records a repair's archive: the live files of every
 * export it repairs (the replay chain behind it) name the archive as their
 * replacement and expire now (the workers' cleanup removes their bytes), their
 * links lead to the archive, and each repaired export gets an audit entry
 * (`export.repaired`, its actor the one who asked for the repair). Returns the exports repaired.
 */
export async function replaceRepairedFiles(
  tx: SqlClient,
  job: Pick<JobInfo, "id" | "tenantId">,
  repair: NonNullable<ExportResult["repair"]>,
): Promise<string[]> {
  const { rows } = await run(tx, replaceRepairedFilesSql, [job.id, job.tenantId]);
  for (const r of rows) {
    await run(tx, auditRepaired, [
      job.tenantId,
      r.job_id,
      job.id,
      JSON.stringify({
        repairedBy: job.id,
        repairOf: repair.of,
        replacedFiles: r.files,
        file: r.file_id,
        linksMoved: r.links,
        adoptedParts: repair.adopted,
        rerunParts: repair.rerun,
      }),
    ]);
  }
  return rows.map((r) => r.job_id);
}
