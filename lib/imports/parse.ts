/**
 * The parse stage: every row checked against the dataset; good rows go to a
 * clean file in COPY's text format, bad ones to errors.csv.
 *
 * It works in committed pieces of IMPORT_PARSE_PIECE_ROWS records, cut at true
 * record boundaries (a newline outside quotes): each piece's clean rows are a
 * segment of the clean file (`storage().segmented`: synced on local disk, a
 * multipart piece on S3), its bad rows an object of their own, and then a
 * checkpoint records where the upload's next record starts (byte offset, line
 * number, papaparse's line break), the counts, the bad rows shown, the clean
 * file's segment state and the bad-row objects. A killed parse's next attempt
 * reads the upload from that offset (a ranged read) and continues: at most one
 * piece is parsed again, and its result — rows, line numbers, counts, files —
 * is an uninterrupted run's. errors.csv is put together from the pieces at the end.
 */
import { PassThrough, Readable } from "node:stream";
import { z } from "zod";
import { inTransaction } from "../db";
import { run as runSql } from "../sql";
import { parseRecorded } from "./sql/statements";
import { attemptRun, recordFile } from "../files/record";
import { PermanentError } from "../jobs/errors";
import { defineTask, type JobContext } from "../jobs/task";
import { logger } from "../log";
import { storage } from "../storage";
import { segmentStateSchema, SegmentsLostError, type SegmentedWrite } from "../storage/driver";
import { checkCell, copyText, importDatasets, isBad, type Cell } from "./columns";
import { importSettings } from "./settings";
import {
  IMPORT_RETRY,
  type ParseOutput,
  SHOWN_BAD_ROWS,
  type ScanOutput,
  type StageInput,
  filesOf,
  follow,
  stageInputSchema,
  upload,
} from "./stage-input";
import { BatchWriter, csvCell, eachRow, type Row, type RowsAt } from "./rows";

/** The version of a parse's checkpoint; one of another version parses the upload from its start. */
export const PARSE_CHECKPOINT_VERSION = 1;

const ERRORS_HEADER = "line,column,reason,value\n";

const shownSchema = z.object({ line: z.number().int(), column: z.string(), reason: z.string() }).strict();

export const parseCheckpointSchema = z
  .object({
    phase: z.literal("parse"),
    version: z.literal(PARSE_CHECKPOINT_VERSION),
    /** The upload it reads (a checkpoint of another is not this parse's). */
    uploadId: z.string(),
    /** Where the upload's next record starts. */
    at: z
      .object({
        offset: z.number().int().min(0),
        line: z.number().int().min(0),
        newline: z.enum(["\n", "\r\n", "\r"]).nullable(),
      })
      .strict(),
    /** Pieces committed. */
    pieces: z.number().int().min(1),
    rowsRead: z.number().int().min(0),
    good: z.number().int().min(0),
    rejected: z.number().int().min(0),
    shown: z.array(shownSchema),
    /** The clean file's segmented write, as of the last piece. */
    clean: segmentStateSchema,
    /** The objects holding the bad rows of the pieces so far (those that had any), in order. */
    errorPieces: z.array(z.string()),
  })
  .strict();
export type ParseCheckpoint = z.infer<typeof parseCheckpointSchema>;

/** The checkpoint to continue from, or null (none, another upload's, or another version: logged). */
function readParseCheckpoint(value: unknown, uploadId: string, tag: string): ParseCheckpoint | null {
  const parsed = parseCheckpointSchema.safeParse(value);
  if (parsed.success && parsed.data.uploadId === uploadId) return parsed.data;
  const seen = value as { phase?: unknown; version?: unknown } | null;
  if (seen?.phase === "parse")
    logger.warn(
      `${tag} its checkpoint (version ${String(seen.version)}, this worker writes ${PARSE_CHECKPOINT_VERSION}) is not this parse's: the upload is parsed from its start`,
    );
  return null;
}

/** The clean file's write continued from `cp`, or null when it cannot be (its staged bytes or a bad-row piece are gone: logged). */
async function continueFrom(cp: ParseCheckpoint, cleanKey: string, tag: string): Promise<SegmentedWrite | null> {
  for (const key of cp.errorPieces) {
    const found = await storage().open(key);
    found?.stream.destroy();
    if (!found) {
      logger.warn(`${tag} the bad rows of an earlier piece (${key}) are gone: the upload is parsed from its start`);
      return null;
    }
  }
  try {
    return await storage().segmented(cleanKey, cp.clean);
  } catch (err) {
    if (!(err instanceof SegmentsLostError)) throw err;
    logger.warn(`${tag} cannot continue its clean file (${err.message}): the upload is parsed from its start`);
    return null;
  }
}

export const importParseTask = defineTask({
  type: "import_parse",
  queue: "bulk",
  inputSchema: stageInputSchema,
  retry: IMPORT_RETRY,
  timeoutMs: 4 * 60 * 60_000,
  leaseMs: 15_000,
  async handler(ctx): Promise<ParseOutput> {
    const { input, job } = ctx;
    const req = input.request;
    await follow(input);
    const tag = `[task:import_parse] job ${job.id}`;
    const base = filesOf(job.tenantId, input.importId);
    const run = `${base}/parse/${job.id}/${attemptRun(job)}`;
    const errorsKey = `${run}/errors.csv`;

    let cp = readParseCheckpoint(ctx.lastCheckpoint, req.uploadId, tag);
    let clean: SegmentedWrite | null = null;
    if (cp) {
      clean = await continueFrom(cp, `${run}/clean.tsv`, tag);
      if (!clean) cp = null;
    }
    clean ??= await storage().segmented(`${run}/clean.tsv`);
    if (cp) logger.info(`${tag} continues after row ${cp.rowsRead} (line ${cp.at.line}, byte ${cp.at.offset})`);
    try {
      return await parseUpload(ctx, clean, cp, { run, errorsKey });
    } catch (err) {
      // The staged bytes went missing under this attempt: the next starts over.
      if (err instanceof SegmentsLostError) await ctx.checkpoint(null).catch(() => {});
      throw err;
    }
  },
});

async function parseUpload(
  ctx: JobContext<StageInput>,
  clean: SegmentedWrite,
  cp: ParseCheckpoint | null,
  keys: { run: string; errorsKey: string },
): Promise<ParseOutput> {
  const { input, job } = ctx;
  const req = input.request;
  const scan = input.outputs.scan as ScanOutput;
  const spec = importDatasets[req.dataset];
  const perPiece = importSettings().IMPORT_PARSE_PIECE_ROWS;

  // Where each file column goes; every dataset column has a place in the clean row.
  const positions = spec.columns.map((c) => scan.columns.indexOf(c.name));
  const shown = cp ? [...cp.shown] : [];
  const errorPieces = cp ? [...cp.errorPieces] : [];
  let pieces = cp?.pieces ?? 0;
  let rowsRead = cp?.rowsRead ?? 0;
  let good = cp?.good ?? 0;
  let rejected = cp?.rejected ?? 0;
  const resumedFrom = rowsRead;

  const file = await upload(req.uploadId, cp?.at.offset ?? 0);
  // The piece being parsed: its clean rows stream into the next segment, its bad rows gather in `bad`.
  const openSegment = () => {
    const writer = new BatchWriter(new PassThrough({ highWaterMark: 1 << 20 }));
    const done = clean.append(writer.stream, [], ctx.signal);
    // Awaited when the piece ends; a failure before then must not go unhandled.
    done.catch(() => {});
    return { writer, done };
  };
  let segment = openSegment();
  const closeSegment = async () => {
    segment.writer.flush();
    segment.writer.stream.end();
    return segment.done;
  };
  let bad: string[] = [];

  const fail = (line: number, column: string, reason: string, value: unknown) => {
    rejected++;
    if (shown.length < SHOWN_BAD_ROWS) shown.push({ line, column, reason });
    const v = value === undefined || value === null ? "" : typeof value === "string" ? value : JSON.stringify(value);
    bad.push(`${line},${csvCell(column)},${csvCell(reason)},${csvCell(v.slice(0, 200))}\n`);
  };
  const onRow = (row: Row) => {
    rowsRead++;
    if (row.problem) {
      fail(row.line, "(row)", row.problem, null);
      return;
    }
    if (row.cells && row.cells.length !== scan.columns.length) {
      fail(row.line, "(row)", `has ${row.cells.length} fields; the header has ${scan.columns.length}`, null);
      return;
    }
    let out = String(row.line);
    if (row.object) {
      const unknown = Object.keys(row.object).find((k) => !spec.columns.some((c) => c.name === k));
      if (unknown) return fail(row.line, unknown, "is not a column of " + req.dataset, null);
    }
    for (let i = 0; i < spec.columns.length; i++) {
      const col = spec.columns[i]!;
      const at = positions[i]!;
      if (!row.object && at < 0) {
        out += "\t\\N";
        continue;
      }
      const cell: Cell = row.object ? row.object[col.name] : row.cells![at];
      const checked = checkCell(col, cell, !row.object);
      if (isBad(checked)) return fail(row.line, col.name, checked.reason, cell);
      out += "\t" + copyText(checked);
    }
    good++;
    segment.writer.push(out + "\n");
  };
  const progress = () =>
    ctx.progress({
      done: rowsRead,
      total: Math.max(scan.rows, rowsRead),
      unit: "rows",
      stage: "parse",
      detail: { good, bad: rejected },
    });

  /** Ends the piece: its clean rows durable, its bad rows stored, then the checkpoint (when the segment committed). */
  const commit = async (at: RowsAt) => {
    const { committed } = await closeSegment();
    pieces++;
    if (bad.length) {
      const key = `${keys.run}/errors.${pieces}.csv`;
      await storage().write(key, Readable.from([bad.join("")]), [], ctx.signal);
      errorPieces.push(key);
      bad = [];
    }
    // On S3 a segment under 5 MiB is carried into the next: no checkpoint until one closes a piece.
    if (committed) {
      await ctx.checkpoint({
        phase: "parse",
        version: PARSE_CHECKPOINT_VERSION,
        uploadId: req.uploadId,
        at,
        pieces,
        rowsRead,
        good,
        rejected,
        shown,
        clean: clean.state(),
        errorPieces,
      } satisfies ParseCheckpoint);
    }
    progress();
    segment = openSegment();
  };

  progress();
  try {
    await eachRow(
      file.stream,
      req.format,
      onRow,
      async () => {
        if (ctx.signal.aborted) throw ctx.signal.reason;
        await segment.writer.drained();
        progress();
      },
      { from: cp?.at, pieces: { records: perPiece, commit } },
    );
    await closeSegment();
  } catch (err) {
    segment.writer.stream.destroy(err as Error);
    file.stream.destroy();
    throw err;
  }
  const finished = await clean.finish();
  const stored = await storage().write(
    keys.errorsKey,
    Readable.from(errorsFile(errorPieces, bad.join(""))),
    [],
    ctx.signal,
  );
  // The errors file is the import's to download (like an export's file), and the first bad rows are shown inline.
  await inTransaction(async (tx) => {
    await recordFile(
      tx,
      { id: input.importId, tenantId: job.tenantId },
      {
        name: "errors.csv",
        key: keys.errorsKey,
        size: stored.size,
        sha256: stored.sha256,
        rows: rejected,
        contentType: "text/csv",
      },
    );
    await runSql(tx, parseRecorded, [
      input.importId,
      rowsRead,
      rejected,
      JSON.stringify(shown),
      JSON.stringify([finished.key]),
    ]);
  });
  // Their rows are in errors.csv now.
  for (const key of errorPieces)
    await storage()
      .delete(key)
      .catch(() => {});
  ctx.progress({
    done: rowsRead,
    total: rowsRead,
    unit: "rows",
    stage: "parse",
    detail: { good, bad: rejected },
  });
  if (rejected > req.maxBadRows) {
    throw new PermanentError(
      // In the form's words ("Allow up to N bad rows"), not the API field's: people read it on the page.
      `more bad rows than allowed: ${rejected} found, ${req.maxBadRows} allowed; the first: line ${shown[0]!.line}, ${shown[0]!.column} ${shown[0]!.reason}. See the errors file`,
    );
  }
  return { cleanKey: finished.key, rowsRead, good, rejected, errorsKey: keys.errorsKey, resumedFrom };
}

/** errors.csv: its header, the bad rows of each stored piece in order, then those of the last piece. */
async function* errorsFile(pieces: string[], last: string): AsyncGenerator<Buffer | string> {
  yield ERRORS_HEADER;
  for (const key of pieces) {
    const opened = await storage().open(key);
    if (!opened) throw new Error(`The bad rows of a piece (${key}) are gone`);
    for await (const chunk of opened.stream as AsyncIterable<Buffer>) yield chunk;
  }
  if (last) yield last;
}
