import { test } from "node:test";
import assert from "node:assert/strict";
import { createRowCounter } from "@/lib/exports/row-counter";

function countInChunks(format: "csv" | "jsonl", text: string, chunkSize: number): number {
  const count = createRowCounter(format);
  const buf = Buffer.from(text);
  let rows = 0;
  for (let i = 0; i < buf.length; i += chunkSize) rows += count(buf.subarray(i, i + chunkSize));
  return rows;
}

const csv = 'id,note\n1,"a ""quoted"", comma"\n2,"line\nbreak"\n3,plain\n4,"end\n"\n';

test("CSV: newlines inside quotes do not end a row, at any chunking", () => {
  for (const size of [1, 2, 3, 5, 7, 64, 4096]) assert.equal(countInChunks("csv", csv, size), 5, `chunk size ${size}`);
});

test("CSV: an empty stream has no rows; a row without its newline is not counted yet", () => {
  assert.equal(countInChunks("csv", "", 4), 0);
  assert.equal(countInChunks("csv", "1,2", 4), 0);
});

test("JSONL: one row per line", () => {
  const text = '{"a":"x\\ny"}\n{"a":2}\n{"a":3}\n';
  for (const size of [1, 4, 100]) assert.equal(countInChunks("jsonl", text, size), 3);
});
