/**
 * The staged segments of a file that will never be finished leave storage: an export cancelled
 * while its file was half written (its checkpoint naming the staging file) has that file removed
 * by the export cleanup, and `file` dropped from its checkpoint; an export still open keeps its
 * staged bytes for its next attempt. Likewise an import's parse stage: its staged clean file and
 * its pieces' bad-row objects, by the imports cleanup.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { Readable } from "node:stream";
import { pool } from "@/lib/db";
import { randomUUID } from "node:crypto";
import { cleanupExpiredExports } from "@/lib/exports/links";
import { cleanupImports } from "@/lib/imports/cleanup";
import { PARSE_CHECKPOINT_VERSION } from "@/lib/imports/parse";
import { enqueueJob } from "@/lib/jobs/enqueue";
import { SEGMENTS_VERSION } from "@/lib/exports/segments";
import { requestExport } from "@/lib/exports/service";
import { cancelJob } from "@/lib/jobs/actions";
import { getJob } from "@/lib/jobs/queries";
import { storage } from "@/lib/storage";
import { useTestDatabase } from "../helpers/db";

const fx = useTestDatabase();

/** A queued export whose checkpoint names a staged file of one committed segment, as a killed attempt leaves it. */
async function halfWritten(): Promise<{ id: string; stagingKey: string }> {
  const { job } = await requestExport(fx.p.ada, { dataset: "events", format: "csv" });
  const write = await storage().segmented(`${fx.p.acmeId}/${job.id}/1/events.csv`);
  await write.append(Readable.from([Buffer.from("id,type\n1,a\n")]), []);
  const file = write.state();
  const checkpoint = {
    phase: "segments",
    version: SEGMENTS_VERSION,
    ids: { from: 1, to: 9 },
    after: 1,
    rows: 1,
    segments: 1,
    file,
  };
  await pool().query("UPDATE jobs SET checkpoint = $2 WHERE id = $1", [job.id, JSON.stringify(checkpoint)]);
  return { id: job.id, stagingKey: file.key };
}

test("a cancelled export's staged file leaves storage at the next cleanup; an open export's stays", async () => {
  const cancelled = await halfWritten();
  const open = await halfWritten();
  assert.ok(await storage().open(cancelled.stagingKey), "staged before");

  await cancelJob(fx.p.ada, cancelled.id);
  assert.equal((await getJob(fx.p.ada, cancelled.id)).status, "cancelled");

  const r = await cleanupExpiredExports();
  assert.equal(r.staged, 1, "one staged file swept");
  assert.equal(await storage().open(cancelled.stagingKey), null, "the cancelled export's staging file is gone");
  const { rows } = await pool().query<{ id: string; checkpoint: Record<string, unknown> }>(
    "SELECT id, checkpoint FROM jobs WHERE id = ANY($1::uuid[])",
    [[cancelled.id, open.id]],
  );
  const cp = new Map(rows.map((x) => [x.id, x.checkpoint]));
  assert.equal(cp.get(cancelled.id)!.file, undefined, "its checkpoint no longer names it");
  assert.equal(cp.get(cancelled.id)!.rows, 1, "the rest of the checkpoint stays as it was");

  assert.ok(await storage().open(open.stagingKey), "the open export's staged bytes stay for its next attempt");
  assert.ok(cp.get(open.id)!.file, "and its checkpoint still names them");
  assert.equal((await cleanupExpiredExports()).staged, 0, "nothing twice");
});

test("a cancelled parse stage's staged clean file and bad-row pieces leave storage at the imports cleanup", async () => {
  const importId = randomUUID();
  const { job } = await enqueueJob({
    tenantId: fx.p.acmeId,
    type: "import_parse",
    input: { importId, jobId: randomUUID(), request: { uploadId: "u-1", dataset: "events" } },
    createdById: fx.p.ada.userId,
  });
  const run = `${fx.p.acmeId}/imports/${importId}/parse/${job.id}/1`;
  const clean = await storage().segmented(`${run}/clean.tsv`);
  await clean.append(Readable.from([Buffer.from("a\tb\n")]), []);
  const piece = `${run}/errors.1.csv`;
  await storage().write(piece, Readable.from([Buffer.from("2,type,bad,x\n")]), []);
  const checkpoint = {
    phase: "parse",
    version: PARSE_CHECKPOINT_VERSION,
    uploadId: "u-1",
    at: { offset: 10, line: 2, newline: "\n" },
    pieces: 1,
    rowsRead: 1,
    good: 1,
    rejected: 1,
    shown: [],
    clean: clean.state(),
    errorPieces: [piece],
  };
  await pool().query("UPDATE jobs SET checkpoint = $2 WHERE id = $1", [job.id, JSON.stringify(checkpoint)]);
  await cancelJob(fx.p.ada, job.id);

  const r = await cleanupImports();
  assert.equal(r.parses, 1, "one staged parse swept");
  assert.equal(await storage().open(clean.state().key), null, "the staged clean file is gone");
  assert.equal(await storage().open(piece), null, "the bad-row piece is gone");
  const { rows } = await pool().query<{ checkpoint: Record<string, unknown> }>(
    "SELECT checkpoint FROM jobs WHERE id = $1",
    [job.id],
  );
  assert.deepEqual(
    [rows[0]!.checkpoint.clean, rows[0]!.checkpoint.errorPieces, rows[0]!.checkpoint.rowsRead],
    [undefined, undefined, 1],
  );
  assert.equal((await cleanupImports()).parses, 0, "nothing twice");
});
