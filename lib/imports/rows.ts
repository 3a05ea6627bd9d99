/**
 * Reading an upload's rows (CSV or JSON Lines) and writing text in batches:
 * what the parse stage runs on.
 */
import { once } from "node:events";
import { PassThrough, type Readable } from "node:stream";
import Papa from "papaparse";
import { type Cell } from "./columns";

// ── parse ───────────────────────────────────────────────────────────────────

/** Writes to a stream in batches of about 64 KB; `drained()` waits when the stream asked to. */
export class BatchWriter {
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

export function csvCell(v: string | number): string {
  const s = String(v);
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export type Row = { line: number; cells: Cell[] | null; object: Record<string, Cell> | null; problem?: string };

/** papaparse's line break: guessed from a CSV's first records, kept for the rest. */
export type Newline = "\n" | "\r\n" | "\r";

/**
 * Where a read of an upload stands at a record boundary: enough to continue it
 * there (the upload read from `offset`) with the same rows and line numbers.
 */
export type RowsAt = {
  /** The upload's byte where the next record starts. */
  offset: number;
  /** The line number of the last record read (CSV: its records, the header being 1; JSON Lines: its lines). */
  line: number;
  /** papaparse's line break for the rest (CSV; null before the first record, and for JSON Lines). */
  newline: Newline | null;
};

/** Cuts the rows into pieces: `commit` is awaited at every `records`-th record boundary, before more is parsed. */
export type RowPieces = { records: number; commit: (at: RowsAt) => Promise<void> };

/**
 * Calls `onRow` for every row of the upload — arrays of cells (CSV) or objects
 * (JSON Lines), with their line numbers — synchronously as each read is
 * parsed (rows kept across reads cost more in garbage collection than the
 * parse), and awaits `afterRead` between reads: the caller's backpressure.
 *
 * Reads are cut into complete records in one pass over their bytes: a newline
 * ends a record unless it is inside quotes (CSV; a doubled quote toggles twice,
 * so counting quotes is enough: scan refused quotes inside unquoted fields),
 * and neither byte occurs inside a UTF-8 character of several bytes. Only
 * complete records are decoded and handed to papaparse (its own stream parses a
 * pending record again with every read: quadratic in its length); a pending
 * record's bytes are kept in pieces and joined once, when it ends.
 *
 * With `pieces`, every `records` records (newlines that end one, empty lines
 * included) the rows so far are parsed and `pieces.commit` is awaited with
 * where the read stands; `from` (a position a commit was given, `stream` being
 * the upload from its `offset`) continues there.
 */
export async function eachRow(
  stream: Readable,
  format: "csv" | "jsonl",
  onRow: (row: Row) => void,
  afterRead: () => Promise<void>,
  opts: { from?: RowsAt; pieces?: RowPieces } = {},
): Promise<void> {
  const csv = format === "csv";
  const { pieces } = opts;
  const at: RowsAt = opts.from ? { ...opts.from } : { offset: 0, line: 0, newline: null };
  const parse = csv
    ? (text: string): void => {
        if (!text) return;
        const result = Papa.parse<string[]>(text, {
          delimiter: ",",
          quoteChar: '"',
          skipEmptyLines: true,
          ...(at.newline ? { newline: at.newline } : {}),
        });
        at.newline ??= result.meta.linebreak as Newline;
        for (const cells of result.data) {
          at.line++;
          if (at.line > 1) onRow({ line: at.line, cells, object: null }); // line 1: the header, checked by scan
        }
      }
    : (text: string): void => {
        // A byte order mark opens the file only (TextDecoder dropped it before pieces were cut).
        if (at.offset === 0 && text.charCodeAt(0) === 0xfeff) text = text.slice(1);
        let start = 0;
        for (let nl = text.indexOf("\n"); nl >= 0; nl = text.indexOf("\n", start)) {
          jsonLine(text.slice(start, nl));
          start = nl + 1;
        }
        if (start < text.length) jsonLine(text.slice(start)); // the last line, without its newline
      };
  const jsonLine = (text: string): void => {
    const line = ++at.line;
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
  // The bytes of a pending record (after the last one parsed), in the pieces the reads brought.
  let pending: Buffer[] = [];
  // Parses what is pending and `tail` (complete records); `at.offset` moves past them.
  const take = (tail: Buffer): void => {
    const bytes = pending.length ? Buffer.concat([...pending, tail]) : tail;
    pending = [];
    parse(bytes.toString("utf8"));
    at.offset += bytes.length;
  };
  let quoted = false;
  let records = 0; // record boundaries since the last piece
  for await (const read of stream as AsyncIterable<Buffer>) {
    let start = 0; // bytes of `read` before it are parsed
    let boundary = -1; // the last record boundary in `read` not yet parsed
    let quote = csv ? read.indexOf(0x22) : -1;
    for (let nl = read.indexOf(0x0a); nl >= 0; nl = read.indexOf(0x0a, nl + 1)) {
      for (; quote >= 0 && quote < nl; quote = read.indexOf(0x22, quote + 1)) quoted = !quoted;
      if (quoted) continue;
      boundary = nl;
      if (pieces && ++records === pieces.records) {
        records = 0;
        take(read.subarray(start, nl + 1));
        start = nl + 1;
        await pieces.commit({ ...at });
      }
    }
    for (; quote >= 0; quote = read.indexOf(0x22, quote + 1)) quoted = !quoted;
    if (boundary >= start) {
      take(read.subarray(start, boundary + 1));
      start = boundary + 1;
    }
    if (start < read.length) pending.push(start ? Buffer.from(read.subarray(start)) : read);
    await afterRead();
  }
  // A last record without its newline.
  if (pending.length) take(Buffer.alloc(0));
}
