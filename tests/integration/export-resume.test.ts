/**
 * An export's file written in checkpointed segments (lib/exports/segments.ts),
 * driven attempt by attempt in this process: the first attempt dies (after a
 * checkpoint, or mid-segment with its signal), the next continues from its
 * checkpoint, and the file equals an uninterrupted run's byte for byte — the
 * gzip members included — with only the rows past the checkpoint read again.
 * The kill -9 of a real worker process is tests/integration/export-resume-kill.test.ts.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createHash, randomUUID } from "node:crypto";
import { buffer } from "node:stream/consumers";
import { gunzipSync } from "node:zlib";
import { resetEnvCache } from "@/lib/env";
import type { IdRange } from "@/lib/exports/datasets";
import type { ExportRequest } from "@/lib/exports/schema";
import { createRowCounter } from "@/lib/exports/row-counter";
import { exportToStorage, SEGMENTS_VERSION, type SegmentsCheckpoint } from "@/lib/exports/segments";
import type { ProgressUpdate } from "@/lib/jobs/task";
import { pool } from "@/lib/db";
import { storage } from "@/lib/storage";
import { useTestDatabase } from "../helpers/db";

const SEGMENT = 700;
process.env.EXPORT_SEGMENT_ROWS = String(SEGMENT);
resetEnvCache();

const fx = useTestDatabase();
const JOB = randomUUID();

/** One attempt: its context, the checkpoints it saved, the most rows its progress showed. */
function attempt(n: number, lastCheckpoint: unknown, die: { afterCheckpoints?: number; atRow?: number } = {}) {
  const controller = new AbortController();
  const saved: SegmentsCheckpoint[] = [];
  let read = 0;
  const ctx = {
    job: {
      id: JOB,
      tenantId: fx.p.acmeId,
      type: "export_part",
      attempt: n,
      resume: 0,
      maxAttempts: 3,
      createdById: null,
    },
    signal: controller.signal,
    progress(u: ProgressUpdate) {
      read = Math.max(read, u.done ?? 0);
      if (die.atRow !== undefined && read >= die.atRow && !controller.signal.aborted) {
        controller.abort(new Error("killed mid-segment"));
      }
    },
    lastCheckpoint,
    async checkpoint(value: unknown) {
      saved.push(value as SegmentsCheckpoint);
      if (die.afterCheckpoints !== undefined && saved.length >= die.afterCheckpoints) {
        throw new Error("killed right after a checkpoint");
      }
    },
  };
  return { ctx, saved, read: () => read, key: (name: string) => `${fx.p.acmeId}/${JOB}/${n}/${name}` };
}

const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");

async function fileOf(key: string): Promise<Buffer> {
  const obj = await storage().open(key);
  assert.ok(obj, `${key} is stored`);
  return buffer(obj.stream);
}

/** The middle half of Acme's event ids: a part's range. */
async function middleRange(): Promise<IdRange> {
  const { rows } = await pool().query<{ lo: string; hi: string }>(
    "SELECT min(id)::text AS lo, max(id)::text AS hi FROM events WHERE tenant_id = $1",
    [fx.p.acmeId],
  );
  const lo = Number(rows[0]!.lo);
  const hi = Number(rows[0]!.hi);
  const q = Math.floor((hi - lo) / 4);
  return { from: lo + q, to: hi - q };
}

/** An uninterrupted run of the same file, for comparison. */
async function uninterrupted(request: ExportRequest, name: string, range?: IdRange) {
  const run = attempt(9, null);
  const done = await exportToStorage(run.ctx, { request, key: run.key(name), range });
  return { ...done, bytes: await fileOf(done.key), checkpoints: run.saved };
}

describe("an export's file resumes from its last checkpoint", () => {
  test("CSV gzip part, killed right after its third checkpoint: the next attempt reads only what follows, and the file is byte for byte the uninterrupted one's", async () => {
    const request: ExportRequest = { dataset: "events", format: "csv", compression: "gzip" } as ExportRequest;
    const range = await middleRange();
    const whole = await uninterrupted(request, "part.csv.gz", range);
    assert.ok(whole.rows > 4 * SEGMENT, `${whole.rows} rows: several segments`);

    const first = attempt(1, null, { afterCheckpoints: 3 });
    await assert.rejects(exportToStorage(first.ctx, { request, key: first.key("part.csv.gz"), range }), /killed/);
    const cp = first.saved.at(-1)!;
    assert.deepEqual([cp.phase, cp.version, cp.rows, cp.segments], ["segments", SEGMENTS_VERSION, 3 * SEGMENT, 3]);
    assert.equal(cp.file.driver, "local");

    const second = attempt(2, cp);
    const done = await exportToStorage(second.ctx, { request, key: second.key("part.csv.gz"), range });
    assert.equal(done.resumedFrom, 3 * SEGMENT, "the second attempt started at the checkpoint");
    assert.equal(done.rows, whole.rows);
    const bytes = await fileOf(done.key);
    assert.equal(done.sha256, sha(bytes), "the recorded sha256 is the file's (hashed over the copied prefix too)");
    assert.equal(done.sha256, whole.sha256, "the same bytes as the uninterrupted run: the same gzip members");
    assert.equal(sha(gunzipSync(bytes)), sha(gunzipSync(whole.bytes)), "the same content");
    // One gzip member per segment: the first segment's bytes alone decompress to the header and its
    // rows (counted as CSV records: a message may hold a newline inside its quotes).
    const records = (text: string) => createRowCounter("csv")(Buffer.from(text));
    const firstSegment = gunzipSync(whole.bytes.subarray(0, whole.checkpoints[0]!.file.size)).toString();
    assert.equal(records(firstSegment), 1 + SEGMENT);
    assert.equal(records(gunzipSync(whole.bytes).toString()), 1 + whole.rows);
    // The first attempt's staging file was taken over (removed), so it cannot be written into again.
    assert.equal(await storage().open(cp.file.key), null);
  });

  test("JSONL single export killed mid-segment: at most one segment is read again", async () => {
    const request = { dataset: "events", format: "jsonl", compression: "none" } as ExportRequest;
    const whole = await uninterrupted(request, "all.jsonl");
    const dieAt = 4 * SEGMENT + 300;
    const first = attempt(1, null, { atRow: dieAt });
    await assert.rejects(exportToStorage(first.ctx, { request, key: first.key("all.jsonl") }));
    const cp = first.saved.at(-1)!;
    assert.equal(cp.rows, 4 * SEGMENT, "killed in the fifth segment");
    assert.ok(cp.ids, "a single export fixes the ids it covers at its start");

    const second = attempt(2, cp);
    const done = await exportToStorage(second.ctx, { request, key: second.key("all.jsonl") });
    const reread = first.read() - done.resumedFrom;
    console.log(`[test] killed at row ${first.read()}, resumed from ${done.resumedFrom}: ${reread} rows read again`);
    assert.ok(reread > 0 && reread <= SEGMENT, `${reread} rows read again, at most one segment (${SEGMENT})`);
    assert.equal(done.rows, whole.rows);
    assert.equal(done.sha256, whole.sha256);
    const lines = (await fileOf(done.key)).toString().trimEnd().split("\n");
    const ids = lines.map((l) => Number((JSON.parse(l) as { id: number }).id));
    assert.deepEqual(
      ids,
      [...ids].sort((a, b) => a - b),
      "in id order",
    );
    assert.equal(new Set(ids).size, ids.length, "no row twice");
  });

  test("a checkpoint of another version, or whose staged file is gone, starts the file again cleanly", async () => {
    const request = { dataset: "orders", format: "csv", compression: "gzip" } as ExportRequest;
    const whole = await uninterrupted(request, "orders.csv.gz");
    const first = attempt(1, null, { afterCheckpoints: 1 });
    await assert.rejects(exportToStorage(first.ctx, { request, key: first.key("orders.csv.gz") }), /killed/);
    const cp = first.saved[0]!;

    const other = attempt(2, { ...cp, version: SEGMENTS_VERSION + 1 });
    const fromOther = await exportToStorage(other.ctx, { request, key: other.key("orders.csv.gz") });
    assert.equal(fromOther.resumedFrom, 0, "another version's checkpoint is not trusted");
    assert.equal(fromOther.sha256, whole.sha256);

    // The staged file is still there (the second attempt did not take it over); now remove it.
    await storage().delete(cp.file.key);
    const lost = attempt(3, cp);
    const fromLost = await exportToStorage(lost.ctx, { request, key: lost.key("orders.csv.gz") });
    assert.equal(fromLost.resumedFrom, 0, "a staged file that is gone: from the start");
    assert.equal(fromLost.sha256, whole.sha256);
  });

  test("an export with no rows is CSV's header alone, as one segment", async () => {
    const request = {
      dataset: "events",
      format: "csv",
      compression: "none",
      filter: { from: "2000-01-01T00:00:00Z", to: "2000-01-02T00:00:00Z" },
    } as ExportRequest;
    const run = attempt(1, null);
    const done = await exportToStorage(run.ctx, { request, key: run.key("empty.csv") });
    assert.equal(done.rows, 0);
    assert.equal((await fileOf(done.key)).toString(), "id,customer_id,type,source,payload,message,occurred_at\n");
    assert.equal(run.saved.length, 0, "nothing to checkpoint");
  });
});
