/**
 * npx tsx bench/import-records.ts [-- --mib 16,32 --runs 3]
 * The import's parse stage (`eachRow`: papaparse for CSV, the JSON Lines
 * splitter) over a file whose one record is huge — 16 MiB, then 32 MiB — read
 * in 64 KiB pieces as storage hands them over, so the record stays pending
 * across hundreds of reads. Parse must be linear in its input: the ratio of
 * the two times should be about 2 (twice the bytes), not about 4 (quadratic:
 * every read parsing the pending record again). Scan refuses such records
 * (IMPORT_MAX_RECORD_BYTES, 1 MiB); this measures parse alone, in process,
 * without a database. Prints the median of `--runs` per size and the ratio.
 */
import { Readable } from "node:stream";
import { parseArgs } from "node:util";
import { eachRow } from "@/lib/imports/stages";

const PIECE = 64 * 1024;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** A header, a row, one record of about `bytes` bytes, a row: CSV (a quoted field) or JSON Lines (a string). */
function file(format: "csv" | "jsonl", bytes: number): Buffer {
  const big = "x".repeat(bytes);
  const text =
    format === "csv"
      ? `customer_id,type,message\n,a,short\n,b,"${big}"\n,c,short\n`
      : `{"type":"a","message":"short"}\n{"type":"b","message":"${big}"}\n{"type":"c","message":"short"}\n`;
  return Buffer.from(text);
}

/** The buffer as storage streams it: 64 KiB reads. */
function pieces(buf: Buffer): Readable {
  let at = 0;
  return new Readable({
    read() {
      this.push(at < buf.length ? buf.subarray(at, (at += PIECE)) : null);
    },
  });
}

async function timeParse(format: "csv" | "jsonl", buf: Buffer): Promise<number> {
  let rows = 0;
  const t0 = performance.now();
  await eachRow(
    pieces(buf),
    format,
    () => rows++,
    async () => {},
  );
  const ms = performance.now() - t0;
  if (rows !== 3) throw new Error(`expected 3 rows, got ${rows}`);
  return ms;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { mib: { type: "string", default: "16,32" }, runs: { type: "string", default: "3" } },
  });
  const sizes = values.mib.split(",").map(Number);
  const runs = Number(values.runs);
  console.log(
    `\nImport parse over one pending record (64 KiB reads; median of ${runs}; ratio: time ÷ the first size's)\n`,
  );
  console.log(`| format | ${sizes.map((s) => `${s} MiB`).join(" | ")} | ratio ${sizes.at(-1)}÷${sizes[0]} MiB |`);
  console.log(`|---|${sizes.map(() => "---").join("|")}|---|`);
  for (const format of ["csv", "jsonl"] as const) {
    const ms: number[] = [];
    for (const mib of sizes) {
      const buf = file(format, mib * 1024 * 1024);
      const times: number[] = [];
      for (let r = 0; r < runs; r++) times.push(await timeParse(format, buf));
      ms.push(median(times));
    }
    console.log(
      `| ${format} | ${ms.map((m) => `${m.toFixed(0)} ms`).join(" | ")} | ${(ms.at(-1)! / ms[0]!).toFixed(2)}× |`,
    );
  }
}

main().catch((err: Error) => {
  console.error(err);
  process.exit(1);
});
