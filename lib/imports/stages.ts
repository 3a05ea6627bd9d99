/**
 * The stages of an import, each a task type with its own retries, timeout and
 * lease (lib/jobs/pipeline.ts runs them in order):
 *
 *   scan    size, sha256, UTF-8, not binary, CSV quoting, header against the dataset
 *   parse   every row checked against the dataset; good rows → a clean file in COPY's
 *           text format (one row per line), bad rows → errors.csv (line, column, reason)
 *   chunk   the clean file cut into byte ranges of IMPORT_CHUNK_ROWS rows (nothing copied)
 *   load    an unlogged staging table, filled by one `import_load_chunk` job per chunk
 *           (COPY … FROM STDIN; a chunk's rows are replaced, so a retried chunk loads once)
 *   commit  one transaction moves the staged rows into the tenant's table (insert, or upsert
 *           by the natural key) and drops the staging table; all or nothing, once
 *
 * Files live under `<tenant>/imports/<importId>/` in the export storage; the
 * workload's cleanup removes them (and the upload) when the import ends.
 */
import { createHash } from "node:crypto";
import { once } from "node:events";
import { PassThrough, type Readable } from "node:stream";
import { pipeline as pipe } from "node:stream/promises";
import Papa from "papaparse";
import { from as copyFrom } from "pg-copy-streams";
import { z } from "zod";
import { cancelOnAbort, inTransaction, pool, type SqlClient } from "../db";
import { env } from "../env";
import { datasetNames } from "../tenants/datasets";
import { attemptRun, recordFile } from "../files/record";
import { PermanentError } from "../jobs/errors";
import { defineTask, type JobContext, type RetryPolicy } from "../jobs/task";
import { storage } from "../storage";
import { withSpan } from "../tracing";
import { openUpload, touchUpload } from "../uploads/service";
import { checkCell, copyText, headerProblem, importDatasets, isBad, type Cell } from "./columns";

export const IMPORT_RETRY: RetryPolicy = {
  maxAttempts: 3,
  initialBackoffMs: 1_000,
  maxBackoffMs: 30_000,
  multiplier: 4,
  jitter: "full",
};

/** How many bad rows an import keeps to show inline (all go to the errors file). */
export const SHOWN_BAD_ROWS = 20;

export const importRequestSchema = z
  .object({
    uploadId: z
      .string({ error: "must be the id of a finished upload" })
      .min(1, "must be the id of a finished upload")
      .max(200, "must be at most 200 characters"),
    dataset: z.enum(datasetNames, { error: `must be one of ${datasetNames.join(", ")}` }),
    format: z.enum(["csv", "jsonl"], { error: "must be csv or jsonl" }).default("csv"),
    mode: z.enum(["insert", "upsert"], { error: "must be insert or upsert" }).default("insert"),
    maxBadRows: z
      .number({ error: "must be a number" })
      .int("must be a whole number")
      .min(0, "must be at least 0")
      .max(1_000_000_000, "must be at most 1000000000")
      .default(0),
  })
  .strict();
export type ImportRequest = z.infer<typeof importRequestSchema>;

/** Every stage's input: the request, the import it belongs to, and what the stages before it made. */
export const stageInputSchema = z
  .object({
    importId: z.uuid(),
    jobId: z.uuid(),
    request: importRequestSchema,
    outputs: z.record(z.string(), z.unknown()).default({}),
  })
  .strict();
export type StageInput = z.infer<typeof stageInputSchema>;

export type ScanOutput = {
  size: number;
  sha256: string;
  encoding: "utf-8";
  format: "csv" | "jsonl";
  columns: string[];
  /** Records after the header (CSV) or lines (JSON Lines). */
  rows: number;
};
export type ParseOutput = { cleanKey: string; rowsRead: number; good: number; rejected: number; errorsKey: string };
/** Bytes `start`–`end` (inclusive) of the clean file `key`: rows `fromLine`–`toLine` of the upload. */
export type Chunk = {
  n: number;
  key: string;
  start: number;
  end: number;
  rows: number;
  fromLine: number;
  toLine: number;
};
export type ChunkOutput = { chunks: Chunk[]; rows: number };
export type LoadOutput = { stagingTable: string; rows: number; chunks: number };
export type CommitOutput = { inserted: number; updated: number; duplicates: number; committedAt: string };

const filesOf = (tenantId: string, importId: string) => `${tenantId}/imports/${importId}`;

const fmt = (n: number) => n.toLocaleString("en");

/** The unlogged table the load stage fills: `import_staging.i_<import id>`. */
export function stagingTableOf(importId: string): string {
  return `import_staging."i_${importId.replace(/-/g, "")}"`;
}

/** Marks the import as being run by `jobId` (a replay's job takes over) and keeps its upload from expiring. */
async function follow(input: StageInput): Promise<void> {
  await pool().query("UPDATE imports SET job_id = $2 WHERE id = $1 AND job_id <> $2", [input.importId, input.jobId]);
  await touchUpload(input.request.uploadId);
}

/** Reads the upload, or fails the stage for good: it was removed. */
async function upload(uploadId: string): Promise<{ stream: Readable; size: number }> {
  try {
    return await openUpload(uploadId);
  } catch (err) {
    throw new PermanentError(`The upload ${uploadId} can no longer be read: ${(err as Error).message}`);
  }
}

// ── scan ────────────────────────────────────────────────────────────────────

/** The refusal of a record longer than IMPORT_MAX_RECORD_BYTES: it would pin the worker that parses it. */
function recordTooLong(line: number, max: number): PermanentError {
  return new PermanentError(
    `The record on line ${line} is longer than ${fmt(max)} bytes (IMPORT_MAX_RECORD_BYTES): split it, or raise the limit`,
  );
}

/**
 * Follows CSV's quoting byte by byte (RFC 4180) and counts records; throws on
 * broken quoting, and on a record (newlines inside quotes included) longer
 * than `maxRecordBytes`, naming the line it starts on.
 */
class CsvShape {
  private state = 0; // 0 field start, 1 unquoted, 2 quoted, 3 quote inside quoted
  private line = 1;
  private openedAt = 0;
  /** Bytes fed before this piece, and where the current record starts (absolute) and on which line. */
  private offset = 0;
  private recordStart = 0;
  private recordLine = 1;
  records = 0;

  constructor(private readonly maxRecordBytes: number) {}

  feed(b: Buffer): void {
    let s = this.state;
    for (let i = 0; i < b.length; i++) {
      const c = b[i]!;
      if (s === 2) {
        if (c === 0x22) s = 3;
        else if (c === 0x0a) this.line++;
        continue;
      }
      if (c === 0x0a) {
        const length = this.offset + i - this.recordStart;
        if (length > this.maxRecordBytes) throw recordTooLong(this.recordLine, this.maxRecordBytes);
        this.records++;
        this.line++;
        this.recordStart = this.offset + i + 1;
        this.recordLine = this.line;
        s = 0;
      } else if (c === 0x2c || c === 0x0d) {
        s = 0;
      } else if (c === 0x22) {
        if (s === 0) {
          s = 2;
          this.openedAt = this.line;
        } else if (s === 3) s = 2;
        else throw new PermanentError(`Broken quoting on line ${this.line}: a quote inside an unquoted field`);
      } else if (s === 3) {
        throw new PermanentError(`Broken quoting on line ${this.line}: text after a closing quote`);
      } else s = 1;
    }
    this.state = s;
    this.offset += b.length;
    // A record still open past the limit is refused now, not after the rest of it is read.
    const open = this.offset - this.recordStart;
    if (open > this.maxRecordBytes) throw recordTooLong(this.recordLine, this.maxRecordBytes);
  }

  end(): void {
    if (this.state === 2) {
      throw new PermanentError(`Broken quoting: the quoted field opened on line ${this.openedAt} is never closed`);
    }
    if (this.state !== 0) this.records++; // a last record without a newline
  }
}

function firstLine(head: Buffer): string {
  const nl = head.indexOf(0x0a);
  return head
    .subarray(0, nl < 0 ? head.length : nl)
    .toString("utf8")
    .replace(/^\uFEFF/, "")
    .replace(/\r$/, "");
}

export const importScanTask = defineTask({
  type: "import_scan",
  queue: "bulk",
  inputSchema: stageInputSchema,
  retry: IMPORT_RETRY,
  timeoutMs: 60 * 60_000,
  leaseMs: 15_000,
  async handler(ctx): Promise<ScanOutput> {
    const { input } = ctx;
    const req = input.request;
    await pool().query(
      `INSERT INTO imports (id, job_id, tenant_id, upload_id, dataset, format, mode)
       VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (id) DO UPDATE SET job_id = EXCLUDED.job_id`,
      [input.importId, input.jobId, ctx.job.tenantId, req.uploadId, req.dataset, req.format, req.mode],
    );
    await touchUpload(req.uploadId);
    const file = await upload(req.uploadId);
    const hash = createHash("sha256");
    const decoder = new TextDecoder("utf-8", { fatal: true });
    const maxRecord = env().IMPORT_MAX_RECORD_BYTES;
    const csv = req.format === "csv" ? new CsvShape(maxRecord) : null;
    let size = 0;
    let lines = 0;
    let lineStart = 0; // JSON Lines: where the current line starts (absolute)
    let head = Buffer.alloc(0);
    let last = 0x0a;
    for await (const chunk of file.stream as AsyncIterable<Buffer>) {
      if (ctx.signal.aborted) {
        file.stream.destroy();
        throw ctx.signal.reason;
      }
      const nul = chunk.indexOf(0);
      if (nul >= 0) {
        file.stream.destroy();
        throw new PermanentError(
          `The file is binary, not ${req.format === "csv" ? "CSV" : "JSON Lines"} text (a NUL byte at byte ${size + nul})`,
        );
      }
      try {
        decoder.decode(chunk, { stream: true });
      } catch {
        file.stream.destroy();
        throw new PermanentError(
          `The file is not UTF-8 text (an invalid byte sequence within bytes ${size}–${size + chunk.length})`,
        );
      }
      if (
        size === 0 &&
        csv &&
        /^\s*\{/.test(
          chunk
            .subarray(0, 64)
            .toString("utf8")
            .replace(/^\uFEFF/, ""),
        )
      ) {
        file.stream.destroy();
        throw new PermanentError("The file looks like JSON Lines, not CSV: import it with format jsonl");
      }
      if (head.length < 65_536) head = Buffer.concat([head, chunk.subarray(0, 65_536)]);
      hash.update(chunk);
      try {
        csv?.feed(chunk);
        if (!csv) {
          for (let i = chunk.indexOf(0x0a); i >= 0; i = chunk.indexOf(0x0a, i + 1)) {
            if (size + i - lineStart > maxRecord) throw recordTooLong(lines + 1, maxRecord);
            lines++;
            lineStart = size + i + 1;
          }
          const open = size + chunk.length - lineStart;
          if (open > maxRecord) throw recordTooLong(lines + 1, maxRecord);
        }
      } catch (err) {
        file.stream.destroy();
        throw err;
      }
      size += chunk.length;
      last = chunk[chunk.length - 1] ?? last;
      ctx.progress({ done: size, total: file.size, unit: "bytes", stage: "scan" });
    }
    try {
      decoder.decode();
    } catch {
      throw new PermanentError("The file is not UTF-8 text (it ends inside a character)");
    }
    if (size === 0) throw new PermanentError("The file is empty");
    const first = firstLine(head);
    let columns: string[];
    if (req.format === "csv") {
      csv!.end();
      columns = (Papa.parse<string[]>(first, { delimiter: ",", quoteChar: '"' }).data[0] ?? []).map((c) => c.trim());
    } else {
      let obj: unknown;
      try {
        obj = JSON.parse(first);
      } catch {
        throw new PermanentError("The file is not JSON Lines: line 1 is not a JSON object");
      }
      if (!obj || typeof obj !== "object" || Array.isArray(obj)) {
        throw new PermanentError("The file is not JSON Lines: line 1 is not a JSON object");
      }
      columns = Object.keys(obj);
      if (last !== 0x0a) lines++;
    }
    const problem = headerProblem(req.dataset, columns);
    if (problem) {
      throw new PermanentError(
        `The ${req.format === "csv" ? "header" : "first line's keys"} do${req.format === "csv" ? "es" : ""} not match ${req.dataset}: ${problem}`,
      );
    }
    const rows = csv ? Math.max(0, csv.records - 1) : lines;
    ctx.progress({
      done: size,
      total: size,
      unit: "bytes",
      stage: "scan",
      detail: { rows, columns: columns.length },
    });
    return { size, sha256: hash.digest("hex"), encoding: "utf-8", format: req.format, columns, rows };
  },
});

// ── parse ───────────────────────────────────────────────────────────────────

/** Writes to a stream in batches of about 64 KB; `drained()` waits when the stream asked to. */
class BatchWriter {
  private parts: string[] = [];
  private length = 0;
  private full = false;
  constructor(readonly stream: PassThrough) {}
  push(s: string): void {
    this.parts.push(s);
    this.length += s.length;
    if (this.length >= 65_536) this.flush();
  }
  flush(): void {
    if (!this.parts.length) return;
    if (!this.stream.write(this.parts.join(""))) this.full = true;
    this.parts = [];
    this.length = 0;
  }
  async drained(): Promise<void> {
    if (!this.full) return;
    this.full = false;
    await once(this.stream, "drain");
  }
}

function csvCell(v: string | number): string {
  const s = String(v);
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

type Row = { line: number; cells: Cell[] | null; object: Record<string, Cell> | null; problem?: string };

/**
 * Calls `onRow` for every row of the upload — arrays of cells (CSV) or objects
 * (JSON Lines), with their line numbers — synchronously as each read is
 * parsed (rows kept across reads cost more in garbage collection than the
 * parse), and awaits `afterRead` between reads: the caller's backpressure.
 */
export async function eachRow(
  stream: Readable,
  format: "csv" | "jsonl",
  onRow: (row: Row) => void,
  afterRead: () => Promise<void>,
): Promise<void> {
  let line = 0;
  if (format === "csv") {
    // papaparse's own stream parses a pending record again with every read (quadratic in its length):
    // it is handed complete records only, cut by CsvRecords in one pass over each read.
    const records = new CsvRecords();
    let newline: Papa.ParseConfig["newline"]; // papaparse's guess from the first records, kept for the rest
    const parse = (text: string): void => {
      if (!text) return;
      const result = Papa.parse<string[]>(text, {
        delimiter: ",",
        quoteChar: '"',
        skipEmptyLines: true,
        ...(newline ? { newline } : {}),
      });
      newline ??= result.meta.linebreak as Papa.ParseConfig["newline"];
      for (const cells of result.data) {
        line++;
        if (line > 1) onRow({ line, cells, object: null }); // line 1: the header, checked by scan
      }
    };
    // Decoded before it is cut: a character split between two reads stays whole.
    stream.setEncoding("utf8");
    for await (const text of stream as AsyncIterable<string>) {
      parse(records.push(text));
      await afterRead();
    }
    parse(records.end());
    return;
  }
  // A line's text so far, in the pieces the reads brought: joined once, when its newline comes.
  let pending: string[] = [];
  const decoder = new TextDecoder("utf-8");
  const parseLine = (text: string): void => {
    line++;
    if (!text.trim()) return;
    try {
      const v: unknown = JSON.parse(text);
      if (!v || typeof v !== "object" || Array.isArray(v)) {
        onRow({ line, cells: null, object: null, problem: "is not a JSON object" });
      } else onRow({ line, cells: null, object: v as Record<string, Cell> });
    } catch {
      onRow({ line, cells: null, object: null, problem: "is not valid JSON" });
    }
  };
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    const text = decoder.decode(chunk, { stream: true });
    let start = 0;
    // Only the new text is searched for newlines: the pending line is never scanned again.
    for (let nl = text.indexOf("\n"); nl >= 0; nl = text.indexOf("\n", start)) {
      const piece = text.slice(start, nl);
      parseLine(pending.length ? pending.join("") + piece : piece);
      pending = [];
      start = nl + 1;
    }
    if (start < text.length) pending.push(text.slice(start));
    await afterRead();
  }
  const rest = pending.join("") + decoder.decode();
  if (rest) parseLine(rest);
}

/**
 * Cuts CSV text into complete records, in one pass over each piece: a newline
 * ends a record unless it is inside quotes (a doubled quote toggles twice, so
 * counting quotes is enough: scan refused quotes inside unquoted fields). The
 * text of a pending record is kept in pieces and joined once, when it ends.
 */
export class CsvRecords {
  private quoted = false;
  private pending: string[] = [];

  /** The complete records that `text` ends (with what was pending before them), or "". */
  push(text: string): string {
    let quoted = this.quoted;
    let boundary = -1;
    let quote = text.indexOf('"');
    for (let nl = text.indexOf("\n"); nl >= 0; nl = text.indexOf("\n", nl + 1)) {
      for (; quote >= 0 && quote < nl; quote = text.indexOf('"', quote + 1)) quoted = !quoted;
      if (!quoted) boundary = nl;
    }
    for (; quote >= 0; quote = text.indexOf('"', quote + 1)) quoted = !quoted;
    this.quoted = quoted;
    if (boundary < 0) {
      if (text) this.pending.push(text);
      return "";
    }
    const done = this.pending.join("") + text.slice(0, boundary + 1);
    this.pending = boundary + 1 < text.length ? [text.slice(boundary + 1)] : [];
    return done;
  }

  /** What is left: a last record without a newline, or "". */
  end(): string {
    const rest = this.pending.join("");
    this.pending = [];
    return rest;
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
    const scan = input.outputs.scan as ScanOutput;
    const spec = importDatasets[req.dataset];
    const base = filesOf(job.tenantId, input.importId);
    const run = attemptRun(job);
    const cleanKey = `${base}/parse/${job.id}/${run}/clean.tsv`;
    const errorsKey = `${base}/parse/${job.id}/${run}/errors.csv`;

    const clean = new BatchWriter(new PassThrough({ highWaterMark: 1 << 20 }));
    const errors = new BatchWriter(new PassThrough());
    const cleanDone = storage().write(cleanKey, clean.stream, [], ctx.signal);
    const errorsDone = storage().write(errorsKey, errors.stream, [], ctx.signal);
    // Whichever fails first stops the rest; the other promise must not go unhandled.
    cleanDone.catch(() => {});
    errorsDone.catch(() => {});
    errors.push("line,column,reason,value\n");

    // Where each file column goes; every dataset column has a place in the clean row.
    const positions = spec.columns.map((c) => scan.columns.indexOf(c.name));
    const shown: { line: number; column: string; reason: string }[] = [];
    let rowsRead = 0;
    let good = 0;
    let rejected = 0;
    const file = await upload(req.uploadId);
    const fail = (line: number, column: string, reason: string, value: unknown) => {
      rejected++;
      if (shown.length < SHOWN_BAD_ROWS) shown.push({ line, column, reason });
      const v = value === undefined || value === null ? "" : typeof value === "string" ? value : JSON.stringify(value);
      errors.push(`${line},${csvCell(column)},${csvCell(reason)},${csvCell(v.slice(0, 200))}\n`);
    };
    try {
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
        clean.push(out + "\n");
      };
      await eachRow(file.stream, req.format, onRow, async () => {
        if (ctx.signal.aborted) throw ctx.signal.reason;
        await clean.drained();
        await errors.drained();
        ctx.progress({
          done: rowsRead,
          total: Math.max(scan.rows, rowsRead),
          unit: "rows",
          stage: "parse",
          detail: { good, bad: rejected },
        });
      });
      clean.flush();
      errors.flush();
      clean.stream.end();
      errors.stream.end();
    } catch (err) {
      clean.stream.destroy(err as Error);
      errors.stream.destroy(err as Error);
      file.stream.destroy();
      throw err;
    }
    const [, stored] = await Promise.all([cleanDone, errorsDone]);
    // The errors file is the import's to download (like an export's file), and the first bad rows are shown inline.
    await inTransaction(async (tx) => {
      await recordFile(
        tx,
        { id: input.importId, tenantId: job.tenantId },
        {
          name: "errors.csv",
          key: errorsKey,
          size: stored.size,
          sha256: stored.sha256,
          rows: rejected,
          contentType: "text/csv",
        },
      );
      await tx.query(
        "UPDATE imports SET rows_read = $2, rejected = $3, bad_rows = $4, files = files || $5::jsonb WHERE id = $1",
        [input.importId, rowsRead, rejected, JSON.stringify(shown), JSON.stringify([cleanKey])],
      );
    });
    ctx.progress({
      done: rowsRead,
      total: rowsRead,
      unit: "rows",
      stage: "parse",
      detail: { good, bad: rejected },
    });
    if (rejected > req.maxBadRows) {
      throw new PermanentError(
        `${rejected} bad row${rejected === 1 ? "" : "s"}, more than maxBadRows (${req.maxBadRows}); the first: line ${shown[0]!.line}, ${shown[0]!.column} ${shown[0]!.reason}. See the errors file`,
      );
    }
    return { cleanKey, rowsRead, good, rejected, errorsKey };
  },
});

// ── chunk ───────────────────────────────────────────────────────────────────

export const importChunkTask = defineTask({
  type: "import_chunk",
  queue: "bulk",
  inputSchema: stageInputSchema,
  retry: IMPORT_RETRY,
  timeoutMs: 60 * 60_000,
  leaseMs: 15_000,
  async handler(ctx): Promise<ChunkOutput> {
    const { input } = ctx;
    await follow(input);
    const parse = input.outputs.parse as ParseOutput;
    const perChunk = env().IMPORT_CHUNK_ROWS;
    const opened = await storage().open(parse.cleanKey);
    if (!opened) throw new PermanentError("The parsed file is gone; replay the import");
    // A chunk is a byte range of the clean file (its rows end at a newline): nothing is copied,
    // each load job reads its range. Lines start with their line number.
    const chunks: Chunk[] = [];
    let offset = 0; // of `b` in the file
    let rows = 0; // in the chunk being measured
    let start = 0; // its first byte
    let fromLine = 0;
    let lastLine = 0;
    let carry: Buffer = Buffer.alloc(0);
    const lineNumberAt = (b: Buffer, at: number) => Number(b.subarray(at, b.indexOf(0x09, at)).toString("latin1"));
    const close = (end: number) => {
      chunks.push({ n: chunks.length + 1, key: parse.cleanKey, start, end, rows, fromLine, toLine: lastLine });
      rows = 0;
      start = end + 1;
    };
    try {
      for await (const piece of opened.stream as AsyncIterable<Buffer>) {
        if (ctx.signal.aborted) throw ctx.signal.reason;
        const b = carry.length ? Buffer.concat([carry, piece]) : piece;
        let lineStart = 0;
        for (let nl = b.indexOf(0x0a); nl >= 0; nl = b.indexOf(0x0a, nl + 1)) {
          lastLine = lineNumberAt(b, lineStart);
          if (rows === 0) fromLine = lastLine;
          rows++;
          if (rows === perChunk) close(offset + nl);
          lineStart = nl + 1;
        }
        carry = Buffer.from(b.subarray(lineStart));
        offset += lineStart;
        ctx.progress({
          done: chunks.length * perChunk + rows,
          total: parse.good,
          unit: "rows",
          stage: "chunk",
          detail: { chunks: chunks.length },
        });
      }
    } catch (err) {
      opened.stream.destroy();
      throw err;
    }
    if (rows > 0) close(offset - 1);
    const total = chunks.reduce((n, c) => n + c.rows, 0);
    if (total !== parse.good)
      throw new PermanentError(`The parsed file holds ${total} rows, not ${parse.good}; replay the import`);
    ctx.progress({ done: total, total, unit: "rows", stage: "chunk", detail: { chunks: chunks.length } });
    return { chunks, rows: total };
  },
});

// ── load ────────────────────────────────────────────────────────────────────

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

/** One chunk into the staging table: its line range replaced in one transaction, so a retry loads it once. */
export const importLoadChunkTask = defineTask({
  type: "import_load_chunk",
  queue: "bulk",
  inputSchema: loadChunkInputSchema,
  retry: { ...IMPORT_RETRY, maxAttempts: 5 },
  timeoutMs: 30 * 60_000,
  leaseMs: 10_000,
  async handler(ctx): Promise<{ n: number; rows: number }> {
    const { chunk } = ctx.input;
    const table = stagingTableOf(ctx.input.importId);
    const opened = await storage().open(chunk.key, { start: chunk.start, end: chunk.end });
    if (!opened) throw new PermanentError(`Chunk ${chunk.n} is gone; replay the import`);
    ctx.progress({
      done: 0,
      total: chunk.rows,
      unit: "rows",
      stage: "load",
      detail: { chunk: chunk.n, chunks: ctx.input.chunks },
    });
    const load = () =>
      inTransaction(async (tx) => {
        // Two attempts of one chunk (a stale one still running) take turns; the later one replaces the earlier's rows.
        await tx.query("SELECT pg_advisory_xact_lock(hashtext($1), $2)", [table, chunk.n]);
        await tx.query(`DELETE FROM ${table} WHERE line BETWEEN $1 AND $2`, [chunk.fromLine, chunk.toLine]);
        const copy = (tx as unknown as import("pg").PoolClient).query(copyFrom(`COPY ${table} FROM STDIN`));
        const abort = () => opened.stream.destroy(ctx.signal.reason as Error);
        ctx.signal.addEventListener("abort", abort, { once: true });
        try {
          await pipe(opened.stream, copy);
        } finally {
          ctx.signal.removeEventListener("abort", abort);
        }
        return Number(copy.rowCount ?? 0);
      });
    const rows = await withSpan(
      "import.copy",
      { "db.system.name": "postgresql", "db.operation.name": "COPY", "conveyor.import.chunk": chunk.n },
      async (span) => {
        const loaded = await load();
        span.setAttribute("conveyor.import.rows", loaded);
        return loaded;
      },
    );
    if (rows !== chunk.rows) throw new PermanentError(`Chunk ${chunk.n} loaded ${rows} rows, not ${chunk.rows}`);
    ctx.progress({
      done: rows,
      total: rows,
      unit: "rows",
      stage: "load",
      detail: { chunk: chunk.n, chunks: ctx.input.chunks },
    });
    return { n: chunk.n, rows };
  },
});

export const importLoadTask = defineTask({
  type: "import_load",
  queue: "bulk",
  inputSchema: stageInputSchema,
  retry: IMPORT_RETRY,
  timeoutMs: 4 * 60 * 60_000,
  leaseMs: 15_000,
  async handler(ctx: JobContext<StageInput>): Promise<LoadOutput> {
    const { input, job } = ctx;
    const chunked = input.outputs.chunk as ChunkOutput;
    const table = stagingTableOf(input.importId);
    if (job.resume === 0) {
      await follow(input);
      const spec = importDatasets[input.request.dataset];
      await pool().query(
        `CREATE UNLOGGED TABLE IF NOT EXISTS ${table} (line bigint NOT NULL, ${spec.columns.map((c) => `"${c.name}" ${c.pg}`).join(", ")})`,
      );
      // Recorded (again, for a replay that loads anew), so the cleanup drops it when the import ends.
      await pool().query("UPDATE imports SET staging_table = $2 WHERE id = $1", [input.importId, table]);
      if (chunked.chunks.length === 0) return { stagingTable: table, rows: 0, chunks: 0 };
      ctx.progress({
        done: 0,
        total: chunked.rows,
        unit: "rows",
        stage: "load",
        detail: { chunks: chunked.chunks.length },
      });
      return ctx.waitForChildren(
        chunked.chunks.map((chunk) => ({
          type: importLoadChunkTask.type,
          input: { importId: input.importId, dataset: input.request.dataset, chunk, chunks: chunked.chunks.length },
        })),
        { chunks: chunked.chunks.length },
      );
    }
    const { rows } = await pool().query<{ status: string; n: number; error: string | null; rows: number | null }>(
      `SELECT status::text AS status, (input->'chunk'->>'n')::int AS n, error_message AS error, (result->>'rows')::int AS rows
       FROM jobs WHERE parent_id = $1 ORDER BY child_index`,
      [job.id],
    );
    const failed = rows.find((r) => r.status !== "succeeded");
    if (failed)
      throw new PermanentError(`Chunk ${failed.n} ${failed.status}${failed.error ? `: ${failed.error}` : ""}`);
    const loaded = rows.reduce((s, r) => s + (r.rows ?? 0), 0);
    ctx.progress({
      done: loaded,
      total: loaded,
      unit: "rows",
      stage: "load",
      detail: { loaded: rows.length },
    });
    return { stagingTable: table, rows: loaded, chunks: rows.length };
  },
});

// ── commit ──────────────────────────────────────────────────────────────────

/** `counts`: the statement's row count is this; otherwise it returns one row of { inserted, updated }. */
type CommitPlan = { sql: string; params: unknown[]; counts?: "inserted" | "updated" };

/** The statements that move the staged rows into the tenant's table, counting what they did. */
function commitStatements(req: ImportRequest, table: string, tenantId: string, present: string[]): CommitPlan[] {
  const spec = importDatasets[req.dataset];
  const cols = spec.columns.filter((c) => c.name !== "id");
  const value = (c: (typeof cols)[number], from = "s") =>
    c.fallback && !present.includes(c.name)
      ? c.fallback
      : c.fallback
        ? `coalesce(${from}."${c.name}", ${c.fallback})`
        : `${from}."${c.name}"`;
  const names = cols.map((c) => `"${c.name}"`).join(", ");
  const values = cols.map((c) => value(c)).join(", ");
  // An update sets only the columns the file has.
  const updatable = cols.filter((c) => present.includes(c.name) && c.name !== spec.key);
  if (req.mode === "insert") {
    return [
      {
        // Counted from the command tag (no RETURNING to materialise); ids follow the file's order.
        sql: `INSERT INTO ${spec.table} (tenant_id, ${names}) SELECT $1::uuid, ${values} FROM ${table} s ORDER BY s.line`,
        params: [tenantId],
        counts: "inserted",
      },
    ];
  }
  if (spec.key === "email") {
    return [
      {
        sql: `WITH up AS (INSERT INTO ${spec.table} AS t (tenant_id, ${names})
                SELECT $1::uuid, ${values} FROM (SELECT DISTINCT ON (email) * FROM ${table} ORDER BY email, line DESC) s
                ORDER BY s.line
                ON CONFLICT (tenant_id, email) DO UPDATE SET ${updatable.map((c) => `"${c.name}" = ${value(c, "EXCLUDED")}`).join(", ") || "email = EXCLUDED.email"}
                RETURNING (xmax = 0) AS inserted)
              SELECT count(*) FILTER (WHERE inserted)::bigint AS inserted, count(*) FILTER (WHERE NOT inserted)::bigint AS updated FROM up`,
        params: [tenantId],
      },
    ];
  }
  // By id within the tenant: the rows whose id the tenant has are updated (the file's last line
  // for an id wins); every other row is inserted with a new id, so no other tenant's row — and
  // no id the sequence will hand out — is ever touched.
  const latest = `(SELECT DISTINCT ON (coalesce(id::text, 'line ' || line)) * FROM ${table}
                   ORDER BY coalesce(id::text, 'line ' || line), line DESC)`;
  return [
    {
      sql: `UPDATE ${spec.table} t SET ${updatable.map((c) => `"${c.name}" = ${value(c)}`).join(", ")}
            FROM ${latest} s WHERE s.id IS NOT NULL AND t.tenant_id = $1::uuid AND t.id = s.id`,
      params: [tenantId],
      counts: "updated",
    },
    {
      sql: `INSERT INTO ${spec.table} (tenant_id, ${names})
            SELECT $1::uuid, ${values} FROM ${latest} s
            WHERE s.id IS NULL OR NOT EXISTS (SELECT 1 FROM ${spec.table} t WHERE t.tenant_id = $1::uuid AND t.id = s.id)
            ORDER BY s.line`,
      params: [tenantId],
      counts: "inserted",
    },
  ];
}

/** Refuses what the target table would refuse or must not get: duplicate emails, customers of other tenants. */
async function checkStaged(tx: SqlClient, req: ImportRequest, table: string, tenantId: string): Promise<void> {
  const first = async (sql: string, params: unknown[] = [tenantId]) =>
    (await tx.query<{ line: string; v: string }>(sql, params)).rows[0];
  if (req.dataset === "customers") {
    // An upsert takes each email's last line; an insert must not meet an email twice.
    if (req.mode === "insert") {
      const dup = await first(
        `SELECT min(line)::text AS line, email AS v FROM ${table} GROUP BY email HAVING count(*) > 1 ORDER BY 1 LIMIT 1`,
        [],
      );
      if (dup) {
        throw new PermanentError(
          `Line ${dup.line}: the email ${dup.v} appears more than once in the file (mode insert)`,
        );
      }
      const taken = await first(
        `SELECT s.line::text AS line, s.email AS v FROM ${table} s
         JOIN customers c ON c.tenant_id = $1::uuid AND c.email = s.email ORDER BY s.line LIMIT 1`,
      );
      if (taken) {
        throw new PermanentError(
          `Line ${taken.line}: a customer with the email ${taken.v} already exists; import with mode upsert to update customers`,
        );
      }
    }
    return;
  }
  const stranger = await first(
    `SELECT s.line::text AS line, s.customer_id::text AS v FROM ${table} s
     WHERE s.customer_id IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM customers c WHERE c.tenant_id = $1::uuid AND c.id = s.customer_id)
     ORDER BY s.line LIMIT 1`,
  );
  if (stranger)
    throw new PermanentError(`Line ${stranger.line}: customer_id ${stranger.v} is not a customer of this tenant`);
}

export const importCommitTask = defineTask({
  type: "import_commit",
  queue: "bulk",
  inputSchema: stageInputSchema,
  retry: IMPORT_RETRY,
  timeoutMs: 4 * 60 * 60_000,
  leaseMs: 30_000,
  async handler(ctx): Promise<CommitOutput> {
    const { input, job } = ctx;
    const req = input.request;
    await follow(input);
    const scan = input.outputs.scan as ScanOutput;
    const load = input.outputs.load as LoadOutput;
    const parse = input.outputs.parse as ParseOutput;
    ctx.progress({
      done: 0,
      total: parse.good,
      unit: "rows",
      stage: "commit",
    });
    const out = await inTransaction(async (tx) => {
      // The import's row is the commit's lock: a second attempt waits, then finds it committed.
      const { rows: held } = await tx.query<{
        committed_at: Date | null;
        inserted: string | null;
        updated: string | null;
      }>("SELECT committed_at, inserted::text, updated::text FROM imports WHERE id = $1 FOR UPDATE", [input.importId]);
      const mine = held[0];
      if (!mine) throw new PermanentError("The import's record is gone");
      if (mine.committed_at) {
        return {
          inserted: Number(mine.inserted),
          updated: Number(mine.updated),
          committedAt: mine.committed_at.toISOString(),
        };
      }
      const exists = await tx.query("SELECT to_regclass($1) AS t", [load.stagingTable]);
      if (!(exists.rows[0] as { t: string | null }).t)
        throw new PermanentError("The staged rows are gone; replay the import");
      // Room to sort the staged rows into the file's order in memory.
      await tx.query("SET LOCAL work_mem = '256MB'");
      const lost = (n: number | string) =>
        new PermanentError(
          `The staging table holds ${n} rows, not ${parse.good} (was the database restarted?); replay the import`,
        );
      if (req.mode === "upsert") {
        const { rows: counted } = await tx.query<{ n: string }>(`SELECT count(*)::text AS n FROM ${load.stagingTable}`);
        if (Number(counted[0]!.n) !== parse.good) throw lost(counted[0]!.n);
      }
      // A cancel (or a lost lease) stops the statement running, however long: nothing is committed.
      const stopListening = await cancelOnAbort(tx, ctx.signal);
      let inserted = 0;
      let updated = 0;
      try {
        await checkStaged(tx, req, load.stagingTable, job.tenantId);
        for (const st of commitStatements(req, load.stagingTable, job.tenantId, scan.columns)) {
          const r = await tx.query<{ inserted: string; updated: string }>(st.sql, st.params);
          if (st.counts === "inserted") inserted += r.rowCount ?? 0;
          else if (st.counts === "updated") updated += r.rowCount ?? 0;
          else {
            inserted += Number(r.rows[0]!.inserted);
            updated += Number(r.rows[0]!.updated);
          }
        }
      } catch (err) {
        if (ctx.signal.aborted) throw ctx.signal.reason;
        throw err;
      } finally {
        stopListening();
      }
      // An insert moves every staged row: fewer means the staging table lost some (rolled back).
      if (req.mode === "insert" && inserted !== parse.good) throw lost(inserted);
      const { rows: at } = await tx.query<{ committed_at: Date }>(
        "UPDATE imports SET committed_at = now(), inserted = $2, updated = $3 WHERE id = $1 RETURNING committed_at",
        [input.importId, inserted, updated],
      );
      await tx.query(`DROP TABLE ${load.stagingTable}`);
      return { inserted, updated, committedAt: at[0]!.committed_at.toISOString() };
    });
    const duplicates = Math.max(0, parse.good - out.inserted - out.updated);
    ctx.progress({
      done: parse.good,
      total: parse.good,
      unit: "rows",
      stage: "commit",
      detail: { inserted: out.inserted, updated: out.updated },
    });
    return { inserted: out.inserted, updated: out.updated, duplicates, committedAt: out.committedAt };
  },
});
