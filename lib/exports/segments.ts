/**
 * An export's file — a single export's, or one part's of a split export —
 * written in checkpointed segments, so that the attempt after a crash
 * continues after the last committed segment instead of from row zero.
 *
 * A segment is the next `EXPORT_SEGMENT_ROWS` rows by id: its last id is looked
 * up first (`buildSegmentEndQuery`), then one `COPY … WHERE id BETWEEN` streams
 * exactly those rows through their own transforms (gzip: one member per
 * segment) and is appended to the file by the storage driver's segmented write
 * (lib/storage: a synced staging file on local disk, multipart pieces on S3).
 * Once a segment is durable the checkpoint records the id it ended at, the rows
 * and segments so far, and the driver's state. So an attempt killed mid-file
 * has read at most one segment past its checkpoint (on S3, past the last
 * segment that closed a 5 MiB piece), and that is all its successor reads again.
 *
 * The bytes do not depend on where a run started: the segments' bounds are the
 * same ids whether one attempt wrote them all or several did, so a resumed file
 * equals an uninterrupted one byte for byte (gzip members included), as long as
 * the rows did not change in between.
 *
 * One attempt reads in one REPEATABLE READ snapshot. The ids a file covers are
 * fixed when it starts (a part's range; for a single export its rows' bounds at
 * its first start, kept in the checkpoint), so a resumed attempt, in a newer
 * snapshot, reads no row added since — as a split export's parts do.
 */
import type pg from "pg";
import type { Readable } from "node:stream";
import { z } from "zod";
import { pool } from "../db";
import { env } from "../env";
import type { JobContext } from "../jobs/task";
import { logger } from "../log";
import { storage } from "../storage";
import { segmentStateSchema, SegmentsLostError, type SegmentedWrite } from "../storage/driver";
import { withSpan } from "../tracing";
import { countingCopyTo } from "./copy";
import { buildBoundsQuery, buildCopyStatement, buildExportQuery, buildSegmentEndQuery, type IdRange } from "./datasets";
import type { ExportRequest } from "./schema";
import { exportSettings } from "./settings";
import { createExportTransforms, estimateRows } from "./stream";

/**
 * The version of the checkpoint's shape and of what it means. A checkpoint of
 * another version is not trusted: the file starts again from its first row.
 */
export const SEGMENTS_VERSION = 1;

const idRangeSchema = z.object({ from: z.number().int(), to: z.number().int() }).strict();

export const segmentsCheckpointSchema = z
  .object({
    phase: z.literal("segments"),
    version: z.literal(SEGMENTS_VERSION),
    /** The ids the file covers, fixed at its first start (null: no row matched then). */
    ids: idRangeSchema.nullable(),
    /** The last id of the last committed segment (`ids.from - 1` before the first). */
    after: z.number().int(),
    /** Rows and segments committed. */
    rows: z.number().int().min(0),
    segments: z.number().int().min(0),
    /** Where the storage driver's write stands (lib/storage/driver.ts). */
    file: segmentStateSchema,
  })
  .strict();
export type SegmentsCheckpoint = z.infer<typeof segmentsCheckpointSchema>;

type ExportCtx = Pick<JobContext<unknown>, "job" | "signal" | "progress" | "checkpoint" | "lastCheckpoint">;

/** What a file's export produced; `resumedFrom`: rows found committed by an earlier attempt (0: it started fresh). */
export type StoredExport = { key: string; rows: number; size: number; sha256: string; resumedFrom: number };

/**
 * The checkpoint to continue from, or null: none, another phase, another version (logged: the
 * file starts again), or one for other ids than `range` (a part's own).
 */
export function readSegmentsCheckpoint(
  value: unknown,
  range: IdRange | undefined,
  tag: string,
): SegmentsCheckpoint | null {
  const parsed = segmentsCheckpointSchema.safeParse(value);
  if (parsed.success) {
    const ids = parsed.data.ids;
    if (!range || (ids && ids.from === range.from && ids.to === range.to)) return parsed.data;
    logger.warn(`${tag} its checkpoint covers other ids than its range: the file starts again`);
    return null;
  }
  const seen = value as { phase?: unknown; version?: unknown } | null;
  if (seen?.phase === "segments") {
    logger.warn(
      `${tag} its checkpoint is of version ${String(seen.version)} (this worker writes ${SEGMENTS_VERSION}): the file starts again`,
    );
  }
  return null;
}

/**
 * A task's file: exports `request` (or one id range of it) to `key` in checkpointed segments,
 * continuing from `ctx.lastCheckpoint` when it holds a segments checkpoint of this version. A
 * file completed after a cancel or a lost lease is deleted, never left behind.
 */
export async function exportToStorage(
  ctx: ExportCtx,
  opts: { request: ExportRequest; key: string; range?: IdRange },
): Promise<StoredExport> {
  ctx.progress({ done: 0, unit: "rows", stage: "exporting" });
  // One span for the COPYs of this attempt, from its snapshot to its COMMIT; gzip runs inside it,
  // and the storage write it feeds is its child.
  const stored = await withSpan(
    "export.copy",
    {
      "db.system.name": "postgresql",
      "db.operation.name": "COPY",
      "conveyor.export.dataset": opts.request.dataset,
      "conveyor.export.format": opts.request.format,
      "conveyor.export.compression": opts.request.compression,
      ...(opts.range
        ? { "conveyor.export.range_from": opts.range.from, "conveyor.export.range_to": opts.range.to }
        : {}),
    },
    async (span) => {
      const done = await copyInSegments(ctx, opts);
      span.setAttributes({
        "db.response.returned_rows": done.rows,
        "conveyor.export.bytes": done.size,
        "conveyor.export.resumed_from": done.resumedFrom,
      });
      return done;
    },
  );
  if (ctx.signal.aborted) {
    await storage().delete(stored.key);
    throw ctx.signal.reason;
  }
  return stored;
}

async function copyInSegments(
  ctx: ExportCtx,
  opts: { request: ExportRequest; key: string; range?: IdRange },
): Promise<StoredExport> {
  const tag = `[task:${ctx.job.type}] job ${ctx.job.id}`;
  const client = await pool().connect();
  let broken: Error | undefined;
  try {
    await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    // Stable, zone-independent timestamps in the file.
    await client.query("SET LOCAL TimeZone = 'UTC'; SET LOCAL DateStyle = 'ISO, YMD'");
    const quote = (v: string) => client.escapeLiteral(v);
    let cp = readSegmentsCheckpoint(ctx.lastCheckpoint, opts.range, tag);
    let writer: SegmentedWrite | undefined;
    if (cp) {
      try {
        writer = await storage().segmented(opts.key, cp.file);
      } catch (err) {
        if (!(err instanceof SegmentsLostError)) throw err;
        logger.warn(`${tag} cannot continue its file (${err.message}): it starts again`);
        cp = null;
      }
    }
    const ids = cp ? cp.ids : (opts.range ?? (await idBounds(client, ctx.job.tenantId, opts.request, quote)));
    const out = writer ?? (await storage().segmented(opts.key));
    const state = { after: cp?.after ?? (ids ? ids.from - 1 : 0), rows: cp?.rows ?? 0, segments: cp?.segments ?? 0 };
    const resumedFrom = state.rows;
    if (cp)
      logger.info(`${tag} continues its file after row ${state.rows} (segment ${state.segments}, id ${state.after})`);

    const estimate = await estimateRows(
      client,
      buildExportQuery(ctx.job.tenantId, opts.request, quote, ids ?? undefined),
    );
    const onRows = (done: number) => ctx.progress({ done, total: Math.max(estimate, done) });
    onRows(state.rows);

    const stored = await withSpan(
      "storage.write",
      { "conveyor.storage.driver": env().STORAGE_DRIVER, "conveyor.storage.key": opts.key },
      async (span) => {
        const segmentSize = exportSettings().EXPORT_SEGMENT_ROWS;
        const more = () => ids !== null && state.after < ids.to;
        // Nothing to read: the file is CSV's header alone (or empty), as one segment.
        if (state.segments === 0 && !more()) {
          await appendSegment(client, out, ctx, opts.request, { from: 1, to: 0 }, true, () => {});
          state.segments = 1;
        }
        while (more()) {
          const from = state.after + 1;
          const end = await client.query<{ last_id: string }>(
            buildSegmentEndQuery(ctx.job.tenantId, opts.request, quote, { from, to: ids!.to }, segmentSize),
          );
          const segment = { from, to: end.rows[0] ? Number(end.rows[0].last_id) : ids!.to };
          const before = state.rows;
          const { rows, committed } = await appendSegment(
            client,
            out,
            ctx,
            opts.request,
            segment,
            state.segments === 0,
            (done) => onRows(before + done),
          );
          state.rows += rows;
          state.segments++;
          state.after = segment.to;
          onRows(state.rows);
          if (committed) {
            await ctx.checkpoint({
              phase: "segments",
              version: SEGMENTS_VERSION,
              ids,
              ...state,
              file: out.state(),
            } satisfies SegmentsCheckpoint);
          }
        }
        await client.query("COMMIT");
        const done = await out.finish();
        span.setAttributes({ "conveyor.storage.bytes": done.size, "conveyor.storage.key": done.key });
        return done;
      },
    );
    return { ...stored, rows: state.rows, resumedFrom };
  } catch (err) {
    // A connection mid-COPY cannot be reused: released as broken below. The staged segments
    // stay for the next attempt to continue.
    broken = err instanceof Error ? err : new Error(String(err));
    // The staged bytes went missing under this attempt (an S3 upload expired): the next starts over.
    if (err instanceof SegmentsLostError) await ctx.checkpoint(null).catch(() => {});
    throw err;
  } finally {
    client.release(broken);
  }
}

/** The first and last id the export covers in this snapshot (null when no row matches). */
async function idBounds(
  client: pg.PoolClient,
  tenantId: string,
  request: ExportRequest,
  quote: (v: string) => string,
): Promise<IdRange | null> {
  const res = await client.query<{ lo: string | null; hi: string | null }>(buildBoundsQuery(tenantId, request, quote));
  const { lo, hi } = res.rows[0] ?? { lo: null, hi: null };
  return lo === null || hi === null ? null : { from: Number(lo), to: Number(hi) };
}

/**
 * One segment: the COPY of `segment`'s ids, through fresh transforms (a gzip member of its own),
 * appended to the file. Resolves with its exact row count (COPY's command tag).
 */
async function appendSegment(
  client: pg.PoolClient,
  writer: SegmentedWrite,
  ctx: ExportCtx,
  request: ExportRequest,
  segment: IdRange,
  withHeader: boolean,
  onRows: (done: number) => void,
): Promise<{ rows: number; committed: boolean }> {
  const select = buildExportQuery(ctx.job.tenantId, request, (v) => client.escapeLiteral(v), segment);
  const copy = countingCopyTo(buildCopyStatement(select, request.format, withHeader));
  const copyStream: Readable = copy.stream;
  // pg hands its connection's errors to the COPY stream as an 'error' event, even once the
  // stream is destroyed and nothing reads it: when a failed write gives the connection up,
  // its "Connection terminated" must land here, not as an uncaught exception that kills the
  // worker (and with it every attempt it runs, before their failures are written).
  copyStream.on("error", () => {});
  const header = request.format === "csv" && withHeader ? 1 : 0;
  if (copy.counted) copy.onPush((messages) => onRows(Math.max(messages - header, 0)));
  const { transforms, rows } = createExportTransforms(request, copy.counted ? undefined : { onRows }, withHeader);
  try {
    const { committed } = await writer.append(client.query(copy.stream), transforms, ctx.signal);
    // COPY's own count (its CommandComplete) is exact; prefer it.
    const exact = copy.stream.rowCount || (copy.counted ? Math.max(copy.messages() - header, 0) : rows());
    return { rows: exact, committed };
  } catch (err) {
    if (!copyStream.destroyed) copyStream.destroy(err instanceof Error ? err : new Error(String(err)));
    throw err;
  }
}
