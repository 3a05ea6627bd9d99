import { test } from "node:test";
import assert from "node:assert/strict";
import { Readable } from "node:stream";
import fc from "fast-check";
import Papa from "papaparse";
import { CsvRecords, eachRow } from "@/lib/imports/stages";

/** `text` as a stream of the given piece sizes (bytes; a UTF-8 character may be split between pieces). */
function streamOf(text: string, sizes: number[]): Readable {
  const buf = Buffer.from(text);
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

test("CsvRecords hands over complete records only: a newline inside quotes does not end one", () => {
  const r = new CsvRecords();
  assert.equal(r.push('a,"b\nc'), "");
  assert.equal(r.push('""d"\ne,f\ng'), 'a,"b\nc""d"\ne,f\n');
  assert.equal(r.push(",h"), "");
  assert.equal(r.end(), "g,h");
  assert.equal(r.end(), "");
});
