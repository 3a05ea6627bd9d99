import { test } from "node:test";
import assert from "node:assert/strict";
import { Readable } from "node:stream";
import fc from "fast-check";
import Papa from "papaparse";
import { eachRow, type RowsAt } from "@/lib/imports/stages";

/** `text` as a stream of the given piece sizes (bytes; a UTF-8 character may be split between pieces). */
function streamOf(text: string | Buffer, sizes: number[]): Readable {
  const buf = Buffer.isBuffer(text) ? text : Buffer.from(text);
  const pieces: Buffer[] = [];
  let at = 0;
  for (let i = 0; at < buf.length; i++) {
    const n = Math.max(1, sizes[i % sizes.length] ?? 1);
    pieces.push(buf.subarray(at, at + n));
    at += n;
  }
  return Readable.from(pieces);
}

async function rowsOf(format: "csv" | "jsonl", text: string, sizes: number[]): Promise<unknown[]> {
  const rows: unknown[] = [];
  await eachRow(
    streamOf(text, sizes),
    format,
    (r) => rows.push([r.line, r.cells ?? r.object ?? r.problem]),
    async () => {},
  );
  return rows;
}

// Cells with what makes CSV hard: quotes, commas, newlines (LF and CRLF), and characters of several bytes.
const cell = fc
  .array(fc.constantFrom("a", "b", '"', ",", "\n", "\r", " ", "é", "€", "😀"), { maxLength: 12 })
  .map((parts) => parts.join(""));
const quoteCell = (c: string) => (/[",\n\r]/.test(c) ? `"${c.replace(/"/g, '""')}"` : c);
const csvText = (rows: string[][], eol: string, lastEol: boolean) =>
  rows.map((r) => r.map(quoteCell).join(",")).join(eol) + (lastEol ? eol : "");

test("eachRow (CSV): the rows, however the file is cut into reads, are papaparse's over the whole file", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.array(cell, { minLength: 3, maxLength: 3 }), { minLength: 1, maxLength: 8 }),
      fc.constantFrom("\n", "\r\n"),
      fc.boolean(),
      fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 6 }),
      async (rows, eol, lastEol, sizes) => {
        const text = csvText([["a", "b", "c"], ...rows], eol, lastEol);
        const whole = Papa.parse<string[]>(text, { delimiter: ",", quoteChar: '"', skipEmptyLines: true }).data;
        const expected = whole.slice(1).map((cells, i) => [i + 2, cells]);
        assert.deepEqual(await rowsOf("csv", text, sizes), expected);
      },
    ),
    { numRuns: 300 },
  );
});

test("eachRow (JSON Lines): a line split over many reads is one row, numbered by its line", async () => {
  const long = "é".repeat(50_000);
  const text = `{"a":1}\n\n{"a":"${long}"}\n[1]\nnot json\n{"b":2}`;
  assert.deepEqual(await rowsOf("jsonl", text, [7, 1000, 3]), [
    [1, { a: 1 }],
    [3, { a: long }],
    [4, "is not a JSON object"],
    [5, "is not valid JSON"],
    [6, { b: 2 }],
  ]);
});

/**
 * The rows of `text` read in pieces of `records` records, and for each commit: the rows before it
 * and the rows of a read continued from it (the bytes from its offset, cut into reads by `sizes`).
 */
async function resumedAtEveryPiece(format: "csv" | "jsonl", text: string, records: number, sizes: number[]) {
  const rows: unknown[] = [];
  const commits: { at: RowsAt; before: number }[] = [];
  await eachRow(
    streamOf(text, sizes),
    format,
    (r) => rows.push([r.line, r.cells ?? r.object ?? r.problem]),
    async () => {},
    { pieces: { records, commit: async (at) => void commits.push({ at, before: rows.length }) } },
  );
  const resumed: unknown[][] = [];
  for (const c of commits) {
    const again: unknown[] = rows.slice(0, c.before);
    await eachRow(
      streamOf(Buffer.from(text).subarray(c.at.offset), sizes),
      format,
      (r) => again.push([r.line, r.cells ?? r.object ?? r.problem]),
      async () => {},
      { from: c.at, pieces: { records, commit: async () => {} } },
    );
    resumed.push(again);
  }
  return { rows, commits, resumed };
}

test("eachRow in pieces: a read continued from any piece's position gives the rows of the whole file, numbered alike", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.array(cell, { minLength: 3, maxLength: 3 }), { minLength: 1, maxLength: 12 }),
      fc.constantFrom("\n", "\r\n"),
      fc.boolean(),
      fc.integer({ min: 1, max: 4 }),
      fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 6 }),
      async (cells, eol, lastEol, records, sizes) => {
        const text = csvText([["a", "b", "c"], ...cells], eol, lastEol);
        const whole = Papa.parse<string[]>(text, { delimiter: ",", quoteChar: '"', skipEmptyLines: true }).data;
        const expected = whole.slice(1).map((c, i) => [i + 2, c]);
        const { rows, commits, resumed } = await resumedAtEveryPiece("csv", text, records, sizes);
        assert.deepEqual(rows, expected);
        for (const r of resumed) assert.deepEqual(r, expected);
        // Each commit is at a record's end: the bytes before it are whole records of the file.
        for (const c of commits) {
          const head = Buffer.from(text).subarray(0, c.at.offset).toString();
          assert.ok(head.endsWith("\n"));
          const n = Papa.parse<string[]>(head, { delimiter: ",", quoteChar: '"', skipEmptyLines: true }).data.length;
          assert.equal(n, c.at.line);
        }
      },
    ),
    { numRuns: 300 },
  );
});

test("eachRow in pieces (JSON Lines): every `records` lines a commit, and a read continued there numbers lines alike", async () => {
  const text = `{"a":1}\n\n{"a":"é€"}\n[1]\nnot json\n{"b":2}\n{"c":3}`;
  const { rows, commits, resumed } = await resumedAtEveryPiece("jsonl", text, 2, [5, 3]);
  assert.deepEqual(
    commits.map((c) => [c.at.line, c.before]),
    [
      [2, 1],
      [4, 3],
      [6, 5],
    ],
  );
  for (const r of resumed) assert.deepEqual(r, rows);
  assert.deepEqual(rows.at(-1), [7, { c: 3 }]);
});
