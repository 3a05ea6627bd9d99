import { test } from "node:test";
import assert from "node:assert/strict";
import { buildCopyStatement, buildExportQuery } from "@/lib/exports/datasets";
import { exportRequestSchema } from "@/lib/exports/schema";
import { Readable, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { coalesce, exportFileName } from "@/lib/exports/stream";

const quote = (v: string) => `'${v.replace(/'/g, "''")}'`;

test("the export query is scoped to the tenant and the window, in id order", () => {
  const sql = buildExportQuery(
    "0193a000-0000-7000-8000-000000000000",
    { dataset: "events", filter: { from: "2026-01-01", to: "2026-02-01" } },
    quote,
  );
  assert.equal(
    sql,
    "SELECT id, customer_id, type, source, payload, message, occurred_at FROM events WHERE tenant_id = '0193a000-0000-7000-8000-000000000000'::uuid AND occurred_at >= '2026-01-01'::timestamptz AND occurred_at < '2026-02-01'::timestamptz ORDER BY id",
  );
});

test("JSONL COPY leaves JSON untouched (control-character quote and delimiter)", () => {
  assert.match(buildCopyStatement("SELECT 1", "jsonl"), /row_to_json\(r\)::text .* QUOTE E'\\x01', DELIMITER E'\\x02'/);
  assert.match(buildCopyStatement("SELECT 1", "csv"), /FORMAT csv, HEADER true/);
});

test("the request schema applies defaults and names failing fields", () => {
  const ok = exportRequestSchema.parse({ dataset: "orders" });
  assert.deepEqual(ok, { dataset: "orders", format: "csv", compression: "none" });
  const bad = exportRequestSchema.safeParse({ dataset: "orders", filter: { from: "2026-13-45" }, extra: 1 });
  assert.equal(bad.success, false);
  const paths = bad.error!.issues.map((i) => i.path.join(".") || "(root)").sort();
  assert.deepEqual(paths, ["(root)", "filter.from"]);
  const reversed = exportRequestSchema.safeParse({
    dataset: "orders",
    filter: { from: "2026-02-01T00:00:00Z", to: "2026-01-01" },
  });
  assert.equal(reversed.error?.issues[0]?.path.join("."), "filter.to");
});

test("file names say what is inside", () => {
  const id = "0193a1b2-0000-7000-8000-000000000000";
  assert.equal(exportFileName(id, { dataset: "orders", format: "csv", compression: "gzip" }), "orders-0193a1b2.csv.gz");
  assert.equal(
    exportFileName(id, { dataset: "events", format: "jsonl", compression: "none" }),
    "events-0193a1b2.jsonl",
  );
});

test("COPY's small chunks reach storage gathered, every byte in order", async () => {
  // 100 socket reads of 1 to 100 bytes, gathered into chunks of at least 1,000 bytes.
  const reads = Array.from({ length: 100 }, (_, i) => Buffer.alloc(i + 1, i));
  const out: Buffer[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      out.push(chunk);
      cb();
    },
  });
  await pipeline(Readable.from(reads), coalesce(1_000), sink);
  assert.deepEqual(Buffer.concat(out), Buffer.concat(reads));
  // Every chunk but the last (the remainder at the end) holds at least 1,000 bytes.
  assert.ok(out.slice(0, -1).every((c) => c.length >= 1_000));
  assert.ok(out.length > 1 && out.length <= Math.ceil(5_050 / 1_000));
});
