/**
 * The scan stage: size, sha256, UTF-8, not binary, CSV quoting, the header
 * against the dataset (lib/imports/stages.ts lists the stages).
 */
import { createHash } from "node:crypto";
import Papa from "papaparse";
import { pool } from "../db";
import { importSettings } from "./settings";
import { PermanentError } from "../jobs/errors";
import { defineTask } from "../jobs/task";
import { touchUpload } from "../uploads/service";
import { headerProblem } from "./columns";
import { IMPORT_RETRY, fmt, stageInputSchema, upload, type ScanOutput } from "./stage-input";

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
    const maxRecord = importSettings().IMPORT_MAX_RECORD_BYTES;
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
