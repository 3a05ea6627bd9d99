/**
 * Exports at scale. An export estimated above its part size is split by id
 * range into parts, each its own job (`export_part`, bulk queue) with its own
 * retries; the export job waits for them holding no worker slot, then gathers
 * the finished part files into one zip with a manifest.json.
 *
 * One snapshot: the plan fixes the last id the export covers (the highest id
 * matching the filter when it was planned), and every part reads ids up to it.
 * Rows added later get higher ids and are left out (strictly, ids follow the
 * sequence, not commit order: a row whose id was drawn just before planning
 * but committed after can be in). Rows changed after planning appear as they
 * are when their part runs (the business tables are append-mostly; a strict
 * point-in-time copy of mutable rows would need one transaction held open for
 * the whole export, which is what the split avoids).
 */
import { availableParallelism } from "node:os";
import type { Readable } from "node:stream";
import yazl from "yazl";
import { z } from "zod";
import { db, pool } from "../db";
import { exportSettings } from "./settings";
import { PermanentError } from "../jobs/errors";
import { defineTask, type JobContext } from "../jobs/task";
import { storage } from "../storage";
import { withSpan } from "../tracing";
import { buildBoundsQuery, buildExportQuery, splitRange, type IdRange } from "./datasets";
import { attemptFileKey, EXPORT_RETRY, recordExportFile, type ExportResult } from "./files";
import { exportRequestSchema, type ExportRequest } from "./schema";
import { exportToStorage } from "./segments";
import { estimateRows } from "./stream";
import { logger } from "../log";

/** The most parts one export is split into. */
export const MAX_PARTS = 1_000;

export type PartsCheckpoint = {
  phase: "parts";
  parts: number;
  snapshot: { lastId: string; takenAt: string };
  /** The export whose parts these are (absent in checkpoints made before repairs: such an export replays from the start). */
  exportId?: string;
  /** A repair (./repair.ts): the finished parts it adopted from the export it repairs, and that export. */
  adopted?: PartResult[];
  repairOf?: string;
};

export type PartResult = {
  part: number;
  name: string;
  key: string;
  size: number;
  sha256: string;
  rows: number;
  range: IdRange;
  /** Rows an earlier attempt had committed when this one started (0: it wrote the file from the start). */
  resumedFrom?: number;
};

/** `events-part-0003-of-0008.csv.gz` */
export function partFileName(request: ExportRequest, part: number, parts: number): string {
  const ext = request.format === "csv" ? "csv" : "jsonl";
  const pad = (n: number) => String(n).padStart(4, "0");
  return `${request.dataset}-part-${pad(part)}-of-${pad(parts)}.${ext}${request.compression === "gzip" ? ".gz" : ""}`;
}

/** The planner's row estimate and the id bounds of what an export covers. */
export async function planExport(
  tenantId: string,
  request: ExportRequest,
): Promise<{ estimate: number; lo: string | null; hi: string | null }> {
  const client = await pool().connect();
  try {
    const quote = (v: string) => client.escapeLiteral(v);
    const estimate = await estimateRows(client, buildExportQuery(tenantId, request, quote));
    const bounds = await client.query<{ lo: string | null; hi: string | null }>(
      buildBoundsQuery(tenantId, request, quote),
    );
    return { estimate, lo: bounds.rows[0]?.lo ?? null, hi: bounds.rows[0]?.hi ?? null };
  } finally {
    client.release();
  }
}

/**
 * How many parts of an export could run at once now: the idle slots of the
 * live workers serving the bulk queue, and at most `EXPORT_PARALLEL_PARTS`
 * (by default half this host's cores: each part's COPY keeps a Postgres
 * backend busy, and a worker core forwards, hashes and compresses its bytes).
 */
export async function partsParallelism(): Promise<number> {
  const [row] = await db().$queryRaw<{ slots: number; busy: number }[]>`
    SELECT
      (SELECT coalesce(sum(concurrency), 0) FROM workers WHERE state = 'running' AND 'bulk' = ANY(queues))::int AS slots,
      (SELECT count(*) FROM jobs WHERE status = 'running' AND queue = 'bulk' AND waiting_since IS NULL)::int AS busy`;
  const idle = Math.max(0, (row?.slots ?? 0) - (row?.busy ?? 0));
  const cores = exportSettings().EXPORT_PARALLEL_PARTS || Math.floor(availableParallelism() / 2);
  return Math.min(idle, cores);
}

/**
 * Splits an export into parts and waits for them when the split buys
 * something; returns (to export as one file) otherwise. A request's own
 * `partRows` always splits (the caller asked for parts). By default an export
 * estimated above EXPORT_PART_ROWS is split only if at least two parts can run
 * at once (`partsParallelism`): on a host where they cannot, parts would run
 * one after another and the zip would read every byte again, so one COPY
 * streamed to one file is faster.
 */
export async function fanOutIfLarge(ctx: JobContext<ExportRequest>): Promise<void> {
  const { job, input } = ctx;
  const plan = await planExport(job.tenantId, input);
  const partRows = input.partRows ?? exportSettings().EXPORT_PART_ROWS;
  if (plan.estimate <= partRows || plan.lo === null || plan.hi === null) return;
  if (input.partRows === undefined && (await partsParallelism()) < 2) return;
  // At most MAX_PARTS: beyond, parts grow instead (each part's end aggregates its siblings).
  const ranges = splitRange(Number(plan.lo), Number(plan.hi), Math.min(MAX_PARTS, Math.ceil(plan.estimate / partRows)));
  if (ranges.length < 2) return;
  ctx.progress({
    done: 0,
    total: plan.estimate,
    unit: "rows",
    stage: "parts",
    detail: { parts: ranges.length },
  });
  const checkpoint: PartsCheckpoint = {
    phase: "parts",
    parts: ranges.length,
    snapshot: { lastId: plan.hi, takenAt: new Date().toISOString() },
    exportId: job.id,
  };
  await ctx.waitForChildren(
    ranges.map((range, i) => ({
      type: exportPartTask.type,
      input: { exportId: job.id, request: input, range, part: i + 1, parts: ranges.length },
    })),
    checkpoint,
  );
}

export const exportPartInputSchema = z
  .object({
    exportId: z.uuid(),
    request: exportRequestSchema,
    range: z.object({ from: z.number().int(), to: z.number().int() }).strict(),
    part: z.number().int().min(1),
    parts: z.number().int().min(1),
  })
  .strict();

/** One part of a split export: its id range of the dataset, streamed into one file. */
export const exportPartTask = defineTask({
  type: "export_part",
  queue: "bulk",
  inputSchema: exportPartInputSchema,
  retry: EXPORT_RETRY,
  timeoutMs: 60 * 60 * 1000,
  // Short: a part lost with its worker is taken over within seconds, and only that part is redone.
  leaseMs: 10_000,
  async handler(ctx): Promise<PartResult> {
    const { job, input } = ctx;
    const name = partFileName(input.request, input.part, input.parts);
    // Continues the file an earlier attempt checkpointed, if any (./segments.ts).
    const { key, rows, size, sha256, resumedFrom } = await exportToStorage(ctx, {
      request: input.request,
      range: input.range,
      key: attemptFileKey(job, name, input.exportId),
    });
    ctx.progress({ done: rows, total: rows, stage: "done" });
    return { part: input.part, name, key, size, sha256, rows, range: input.range, resumedFrom };
  },
});

/**
 * The export's second run, once every part has ended: the finished part files
 * go into one zip (stored as they are: a gzip part is not compressed again)
 * with a manifest.json. If a part ended dead, the zip of the finished ones is
 * kept as a partial result and the export fails saying so. A repair
 * (./repair.ts) gathers the parts it adopted with the ones it reran.
 */
export async function assembleParts(ctx: JobContext<ExportRequest>, cp: PartsCheckpoint): Promise<ExportResult> {
  const { job, input } = ctx;
  const children = await db().job.findMany({
    where: { parentId: job.id },
    select: { id: true, status: true, result: true, input: true, errorMessage: true },
    orderBy: { childIndex: "asc" },
  });
  // Read loosely: a part may have died of an input that no longer parses.
  const parts = children
    .map((c) => ({ ...c, spec: c.input as { part: number; range: IdRange } }))
    .sort((a, b) => a.spec.part - b.spec.part);
  const adopted = cp.adopted ?? [];
  const done = [...adopted, ...parts.filter((p) => p.status === "succeeded").map((p) => p.result as PartResult)].sort(
    (a, b) => a.part - b.part,
  );
  const missing = parts.filter((p) => p.status !== "succeeded");
  const partial = missing.length > 0;
  const total = cp.parts;
  ctx.progress({
    stage: "assembling",
    detail: { done: done.length, parts: total },
  });

  const takenAt = new Date(cp.snapshot.takenAt);
  const rowCount = done.reduce((a, p) => a + p.rows, 0);
  const repair = cp.repairOf
    ? { of: cp.repairOf, adopted: adopted.map((p) => p.part), rerun: parts.map((p) => p.spec.part) }
    : undefined;
  const manifest = {
    export: job.id,
    dataset: input.dataset,
    format: input.format,
    compression: input.compression,
    filter: input.filter ?? null,
    snapshot: {
      lastId: cp.snapshot.lastId,
      takenAt: cp.snapshot.takenAt,
      includes: "rows matching the filter whose id was at most lastId when the export was planned",
    },
    partial,
    // A repair: the export it completes, the parts it took from there and the ones it ran again.
    ...(repair ? { repair } : {}),
    rowCount,
    files: done.map((p) => ({
      name: p.name,
      part: p.part,
      rows: p.rows,
      size: p.size,
      sha256: p.sha256,
      ids: p.range,
    })),
    missingParts: missing.map((p) => ({
      part: p.spec.part,
      ids: p.spec.range,
      status: p.status,
      error: p.errorMessage,
    })),
  };

  const name = `${input.dataset}-${job.id.slice(0, 8)}${partial ? "-partial" : ""}.zip`;
  const key = attemptFileKey(job, name);
  const stored = await withSpan(
    "export.archive",
    { "conveyor.export.parts": done.length, "conveyor.export.partial": partial, "conveyor.export.rows": rowCount },
    async (span) => {
      const zipped = await zipParts(ctx, done, manifest, takenAt, key);
      span.setAttribute("conveyor.export.bytes", zipped.size);
      return zipped;
    },
  );
  const file = { name, key, size: stored.size, sha256: stored.sha256, rows: rowCount, contentType: "application/zip" };

  if (partial) {
    // Offered for download although the export fails; recorded only while this attempt holds the job.
    try {
      await ctx.fenced((tx) => recordExportFile(tx, job, file, true));
    } catch (err) {
      await storage().delete(key);
      throw err;
    }
  }
  if (partial) {
    const first = missing[0]!;
    throw new PermanentError(
      `${missing.length} of ${total} parts failed (part ${first.spec.part}: ${first.errorMessage ?? first.status}); ` +
        `the ${done.length} finished parts are offered as a partial result`,
    );
  }
  ctx.progress({ done: rowCount, total: rowCount, stage: "done" });
  return {
    rows: rowCount,
    format: input.format,
    compression: input.compression,
    files: [file],
    ...(repair ? { repair } : {}),
  };
}

/** The finished parts' files and the manifest, zipped into storage under `key` as they are read. */
async function zipParts(
  ctx: JobContext<ExportRequest>,
  done: PartResult[],
  manifest: unknown,
  takenAt: Date,
  key: string,
): Promise<{ size: number; sha256: string }> {
  // A part file that is gone or fails mid-read fails this attempt (retried): the error
  // ends the zip's stream, so the storage write rejects and leaves nothing behind.
  const zip = new yazl.ZipFile();
  const output = zip.outputStream as unknown as Readable;
  // An error may come before the storage write below attaches to the stream: this keeps it
  // from being an uncaught exception; the write still sees the stream errored and rejects.
  output.on("error", () => {});
  const fail = (err: Error) => output.destroy(err);
  zip.on("error", fail);
  let reading: Readable | null = null;
  ctx.signal.addEventListener("abort", () => reading?.destroy(), { once: true });
  for (const p of done) {
    zip.addReadStreamLazy(p.name, { compress: false, mtime: takenAt, size: p.size }, (cb) => {
      storage()
        .open(p.key)
        .then((obj) => {
          if (!obj) return fail(new Error(`The file of part ${p.part} is gone (${p.name})`));
          reading = obj.stream;
          obj.stream.on("error", fail);
          cb(null, obj.stream);
        })
        .catch(fail);
    });
  }
  zip.addBuffer(Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`), "manifest.json", { mtime: takenAt });
  zip.end();
  return storage().write(key, output, [], ctx.signal);
}

/**
 * Removes the files of parts whose export has ended (its zip holds them, or it
 * failed or was cancelled): run by the workers' cleanup, after the export's end
 * is committed, never inside it. Marks each part's result `fileDeleted`. A
 * failed export keeps them while it may be repaired (./repair.ts adopts them):
 * in the dead-letter queue, or offering a partial file no repair has replaced;
 * a failed or cancelled one while a replay of it is still open.
 */
export async function sweepPartFiles(limit = 500): Promise<number> {
  const parts = await db().$queryRaw<{ id: string; key: string }[]>`
    SELECT c.id, c.result->>'key' AS key
    FROM jobs c JOIN jobs p ON p.id = c.parent_id
    WHERE c.type = 'export_part' AND c.status = 'succeeded' AND c.result ? 'key'
      AND NOT (c.result ? 'fileDeleted') AND p.status IN ('succeeded', 'failed', 'cancelled', 'expired')
      AND NOT (p.status = 'failed' AND (p.discarded_at IS NULL OR EXISTS (
        SELECT 1 FROM export_files f WHERE f.job_id = p.id AND f.deleted_at IS NULL AND f.replaced_by_id IS NULL
          AND f.expires_at > now())))
      AND NOT (p.status IN ('failed', 'cancelled') AND EXISTS (
        SELECT 1 FROM jobs r WHERE r.replay_of_id = p.id AND r.status NOT IN ('succeeded', 'failed', 'cancelled', 'expired')))
    LIMIT ${limit}`;
  let swept = 0;
  for (const part of parts) {
    try {
      await storage().delete(part.key);
      await db()
        .$executeRaw`UPDATE jobs SET result = result || '{"fileDeleted": true}'::jsonb WHERE id = ${part.id}::uuid`;
      swept++;
    } catch (err) {
      logger.error(
        { err, storageKey: part.key },
        `[exports] could not delete part file ${part.key}: ${(err as Error).message}`,
      );
    }
  }
  return swept;
}
