/**
 * One chunk of an import's clean file into the staging table, in committed
 * pieces: every IMPORT_LOAD_PIECE_ROWS lines are one transaction (`COPY … FROM
 * STDIN` of their bytes), followed by a checkpoint of the byte offset where the
 * next piece starts and the rows loaded. A killed load's next attempt starts
 * at that offset, so at most one piece is read and loaded again.
 *
 * Rows are loaded once whoever loads them: each piece's transaction holds the
 * attempt's fence (`ctx.fenced`: a stale attempt's piece is refused once a
 * newer attempt has claimed the chunk), and each attempt's first piece first
 * deletes the lines from where it starts to the chunk's end — whatever a killed
 * attempt committed past its last checkpoint, or an earlier run of the import
 * left (a replay loads anew).
 */
import { Readable } from "node:stream";
import { pipeline as pipe } from "node:stream/promises";
import type pg from "pg";
import { from as copyFrom } from "pg-copy-streams";
import { z } from "zod";
import { PermanentError } from "../jobs/errors";
import { defineTask, type JobContext, type SqlClient } from "../jobs/task";
import { logger } from "../log";
import { storage } from "../storage";
import { withSpan } from "../tracing";
import { datasetNames } from "../tenants/datasets";
import { importSettings } from "./settings";
import { IMPORT_RETRY, stagingTableOf } from "./stage-input";

/** The version of a load's checkpoint; one of another version loads the chunk from its start. */
export const LOAD_CHECKPOINT_VERSION = 1;

const loadCheckpointSchema = z
  .object({
    phase: z.literal("load"),
    version: z.literal(LOAD_CHECKPOINT_VERSION),
    /** The chunk's number (a checkpoint of another chunk is not this one's). */
    n: z.number().int(),
    /** The file's byte where the next piece starts. */
    offset: z.number().int().min(0),
    /** Rows loaded before it. */
    rows: z.number().int().min(0),
  })
  .strict();
type LoadCheckpoint = z.infer<typeof loadCheckpointSchema>;

export const loadChunkInputSchema = z
  .object({
    importId: z.uuid(),
    dataset: z.enum(datasetNames),
    chunk: z.object({
      n: z.number().int(),
      key: z.string(),
      start: z.number().int().min(0),
      end: z.number().int().min(0),
      rows: z.number().int(),
      fromLine: z.number().int(),
      toLine: z.number().int(),
    }),
    chunks: z.number().int(),
  })
  .strict();
type LoadChunkInput = z.infer<typeof loadChunkInputSchema>;

/** The checkpoint to continue from, or null (none, another chunk's, or another version: logged). */
function readLoadCheckpoint(value: unknown, n: number, tag: string): LoadCheckpoint | null {
  const parsed = loadCheckpointSchema.safeParse(value);
  if (parsed.success && parsed.data.n === n) return parsed.data;
  const seen = value as { phase?: unknown; version?: unknown } | null;
  if (seen?.phase === "load")
    logger.warn(
      `${tag} its checkpoint (version ${String(seen.version)}) is not this load's: the chunk loads from its start`,
    );
  return null;
}

/** One chunk into the staging table, piece by committed piece; a retry continues after the last. */
export const importLoadChunkTask = defineTask({
  type: "import_load_chunk",
  queue: "bulk",
  inputSchema: loadChunkInputSchema,
  retry: { ...IMPORT_RETRY, maxAttempts: 5 },
  timeoutMs: 30 * 60_000,
  leaseMs: 10_000,
  async handler(ctx): Promise<{ n: number; rows: number; resumedFrom: number }> {
    const { chunk } = ctx.input;
    const tag = `[task:import_load_chunk] job ${ctx.job.id}`;
    const cp = readLoadCheckpoint(ctx.lastCheckpoint, chunk.n, tag);
    const at = { offset: cp?.offset ?? chunk.start, rows: cp?.rows ?? 0 };
    const resumedFrom = at.rows;
    if (cp) logger.info(`${tag} continues chunk ${chunk.n} after row ${at.rows} (byte ${at.offset})`);
    const progress = () =>
      ctx.progress({
        done: at.rows,
        total: chunk.rows,
        unit: "rows",
        stage: "load",
        detail: { chunk: chunk.n, chunks: ctx.input.chunks },
      });
    progress();
    const rows = await withSpan(
      "import.copy",
      { "db.system.name": "postgresql", "db.operation.name": "COPY", "conveyor.import.chunk": chunk.n },
      async (span) => {
        if (at.offset <= chunk.end) await loadPieces(ctx, at, progress);
        span.setAttribute("conveyor.import.rows", at.rows);
        return at.rows;
      },
    );
    if (rows !== chunk.rows) throw new PermanentError(`Chunk ${chunk.n} loaded ${rows} rows, not ${chunk.rows}`);
    progress();
    return { n: chunk.n, rows, resumedFrom };
  },
});

/** Reads the chunk from `at.offset` and loads it a piece at a time, checkpointing after each. */
async function loadPieces(
  ctx: JobContext<LoadChunkInput>,
  at: { offset: number; rows: number },
  progress: () => void,
): Promise<void> {
  const { chunk } = ctx.input;
  const table = stagingTableOf(ctx.input.importId);
  const perPiece = importSettings().IMPORT_LOAD_PIECE_ROWS;
  const opened = await storage().open(chunk.key, { start: at.offset, end: chunk.end });
  if (!opened) throw new PermanentError(`Chunk ${chunk.n} is gone; replay the import`);
  // Lines start with their line number (the clean file's COPY text format).
  const lineNumberAt = (b: Buffer, i: number) => Number(b.subarray(i, b.indexOf(0x09, i)).toString("latin1"));
  let first = true;
  let piece: Buffer[] = [];
  let pieceBytes = 0;
  let pieceLines = 0;
  let pieceFrom = 0;
  const commit = async () => {
    const bufs = piece;
    const from = pieceFrom;
    const loaded = await ctx.fenced((tx) => copyPiece(tx, ctx, table, bufs, first ? { from, to: chunk.toLine } : null));
    if (loaded !== pieceLines)
      throw new PermanentError(`Chunk ${chunk.n} loaded ${loaded} rows of a piece of ${pieceLines}`);
    first = false;
    at.offset += pieceBytes;
    at.rows += loaded;
    piece = [];
    pieceBytes = 0;
    pieceLines = 0;
    await ctx.checkpoint({
      phase: "load",
      version: LOAD_CHECKPOINT_VERSION,
      n: chunk.n,
      ...at,
    } satisfies LoadCheckpoint);
    progress();
  };
  let carry: Buffer = Buffer.alloc(0);
  try {
    for await (const read of opened.stream as AsyncIterable<Buffer>) {
      if (ctx.signal.aborted) throw ctx.signal.reason;
      const b = carry.length ? Buffer.concat([carry, read]) : read;
      let lineStart = 0;
      let taken = 0; // bytes of `b` already in `piece`
      for (let nl = b.indexOf(0x0a); nl >= 0; nl = b.indexOf(0x0a, nl + 1)) {
        if (pieceLines === 0) pieceFrom = lineNumberAt(b, lineStart);
        pieceLines++;
        lineStart = nl + 1;
        if (pieceLines === perPiece) {
          piece.push(Buffer.from(b.subarray(taken, lineStart)));
          pieceBytes += lineStart - taken;
          taken = lineStart;
          await commit();
        }
      }
      if (lineStart > taken) {
        piece.push(Buffer.from(b.subarray(taken, lineStart)));
        pieceBytes += lineStart - taken;
      }
      carry = Buffer.from(b.subarray(lineStart));
    }
    if (carry.length) throw new PermanentError(`Chunk ${chunk.n} does not end at a line's end; replay the import`);
    if (pieceLines > 0) await commit();
  } finally {
    opened.stream.destroy();
  }
}

/**
 * One piece in one transaction that holds the attempt's fence: under the chunk's advisory lock
 * (an attempt of an earlier version loads its whole chunk under it), first the lines `clear`
 * (this attempt's first piece: from its start to the chunk's end), then the COPY.
 */
async function copyPiece(
  tx: SqlClient,
  ctx: JobContext<LoadChunkInput>,
  table: string,
  bufs: Buffer[],
  clear: { from: number; to: number } | null,
): Promise<number> {
  await tx.query("SELECT pg_advisory_xact_lock(hashtext($1), $2)", [table, ctx.input.chunk.n]);
  if (clear) await tx.query(`DELETE FROM ${table} WHERE line BETWEEN $1 AND $2`, [clear.from, clear.to]);
  const copy = (tx as unknown as pg.PoolClient).query(copyFrom(`COPY ${table} FROM STDIN`));
  const source = Readable.from(bufs);
  const abort = () => source.destroy(ctx.signal.reason as Error);
  ctx.signal.addEventListener("abort", abort, { once: true });
  try {
    await pipe(source, copy);
  } finally {
    ctx.signal.removeEventListener("abort", abort);
  }
  return Number(copy.rowCount ?? 0);
}
