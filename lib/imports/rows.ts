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
