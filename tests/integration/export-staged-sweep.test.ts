/**
 * The staged segments of an export file that will never be finished leave storage: an export
 * cancelled while its file was half written (its checkpoint naming the staging file) has that
 * file removed by the export cleanup, and `file` dropped from its checkpoint; an export still
 * open keeps its staged bytes for its next attempt.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { Readable } from "node:stream";
import { pool } from "@/lib/db";
import { cleanupExpiredExports } from "@/lib/exports/links";
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
