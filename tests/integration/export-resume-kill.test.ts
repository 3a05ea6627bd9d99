/**
 * kill -9 of a worker process mid-file: the export's next attempt continues
 * after the last checkpoint of the killed one, reading again at most one
 * segment, and the files equal an uninterrupted run's (content and bytes) —
 * for a single export and for the parts of a split one.
 */
import { before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
import { db, pool } from "@/lib/db";
import { resetEnvCache } from "@/lib/env";
import type { ExportResult } from "@/lib/exports/files";
import type { PartResult } from "@/lib/exports/parts";
import type { SegmentsCheckpoint } from "@/lib/exports/segments";
import { requestExport } from "@/lib/exports/service";
import { recordWorkerExit } from "@/lib/jobs/workers";
import { backendsGone, exportCopiesInFlight, rowsReadAgain } from "../chaos/exports-harness";
import { useTestDatabase } from "../helpers/db";
import { drainJobs } from "../helpers/fixtures";
import { workerArgs } from "../helpers/worker";

const SEGMENT = 200;
// This process runs the uninterrupted exports with the same segments as the workers.
process.env.EXPORT_SEGMENT_ROWS = String(SEGMENT);
process.env.EXPORT_PARALLEL_PARTS = "2";
resetEnvCache();

const fx = useTestDatabase({ seed: 0.05 });

const APP = "conveyor-export-resume-kill";

function startWorker(): ChildProcess & { output: () => string } {
  const child = spawn(process.execPath, workerArgs("--queues", "interactive,bulk", "--concurrency", "2"), {
    env: {
      ...process.env,
      DATABASE_URL: fx.database.url,
      ADMISSION_SWEEP_MS: "200",
      REAPER_INTERVAL_MS: "200",
      WORKER_DEAD_AFTER_MS: "1000",
      // Its COPYs are told apart in pg_stat_activity.
      PGAPPNAME: APP,
    },
    stdio: ["ignore", "pipe", "pipe", "ipc"],
  });
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
  child.stderr!.on("data", (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
  return Object.assign(child, { output: () => out });
}

type Caught = { id: string; checkpoint: SegmentsCheckpoint; reread: number };

/**
 * Runs export `id` on a worker, SIGKILLs it once a file of the export has committed at least
 * `segments` segments, and finishes it on a second worker. Returns what each running file had
 * committed at the kill, and the rows its killed attempt had read past that (from Postgres's
 * pg_stat_progress_copy, read just before the SIGKILL): what the next attempt reads again.
 */
async function killMidFile(id: string, segments: number): Promise<Caught[]> {
  const first = startWorker();
  let second: ReturnType<typeof startWorker> | null = null;
  try {
    const deadline = Date.now() + 60_000;
    let seen = false;
    while (Date.now() < deadline && !seen) {
      const { rows } = await pool().query(
        `SELECT 1 FROM jobs WHERE (id = $1 OR parent_id = $1) AND status = 'running'
           AND checkpoint->>'phase' = 'segments' AND (checkpoint->>'segments')::int >= $2`,
        [id, segments],
      );
      seen = rows.length > 0;
      if (!seen) await sleep(5);
    }
    assert.ok(seen, `a file of the export committed ${segments} segments while running:\n${first.output()}`);
    const copies = await exportCopiesInFlight(pool(), APP);
    first.kill("SIGKILL");
    await once(first, "exit");
    // Its checkpoints as its backends left them (a COMMIT sent just before the kill may land after it).
    await backendsGone(pool(), APP);
    // As npm start's supervisor does: the exit is recorded, its attempts are taken back at once.
    await recordWorkerExit(first.pid!, "SIGKILL");
    const { rows: files } = await pool().query<Omit<Caught, "reread">>(
      `SELECT id, checkpoint FROM jobs
       WHERE (id = $1 OR parent_id = $1) AND checkpoint->>'phase' = 'segments'
         AND status NOT IN ('succeeded', 'failed', 'cancelled')`,
      [id],
    );
    const caught: Caught[] = [];
    for (const f of files) {
      const file = { tenantId: fx.p.acmeId, after: f.checkpoint.after, to: f.checkpoint.ids?.to ?? null };
      caught.push({ ...f, reread: await rowsReadAgain(pool(), file, copies) });
    }
    second = startWorker();
    const until = Date.now() + 90_000;
    for (;;) {
      const j = await db().job.findUniqueOrThrow({ where: { id } });
      if (j.status === "succeeded" || j.status === "failed") break;
      assert.ok(Date.now() < until, `the export finished after the kill:\n${second.output()}`);
      await sleep(50);
    }
    return caught;
  } finally {
    for (const w of [first, second]) {
      if (w && w.exitCode === null && w.signalCode === null) {
        w.kill("SIGTERM");
        await once(w, "exit");
      }
    }
  }
}

/** The file each caught job finished with, and how many rows it had read again. */
async function resumedFiles(caught: Caught[]) {
  const out = [];
  for (const c of caught) {
    const job = await db().job.findUniqueOrThrow({ where: { id: c.id }, include: { attemptsHistory: true } });
    assert.equal(job.status, "succeeded");
    const result = job.result as (PartResult & ExportResult) | null;
    assert.ok(result);
    out.push({ job, result, reread: c.reread, committed: c.checkpoint.rows });
  }
  return out;
}

describe("kill -9 mid-file", () => {
  // Fresh statistics, so the planner's estimate (which sets a split export's parts) is the same for both runs.
  before(() => pool().query("ANALYZE events"));

  test("a single export continues after its last checkpoint; the file equals an uninterrupted run's", async () => {
    const { job } = await requestExport(fx.p.ada, { dataset: "events", format: "csv", compression: "gzip" });
    const caught = await killMidFile(job.id, 5);
    assert.equal(caught.length, 1, "the export itself was writing its file");
    const [r] = await resumedFiles(caught);
    console.log(`[test] single export: committed ${r!.committed} rows at the kill, ${r!.reread} re-read`);
    assert.equal(r!.result.resumedFrom, r!.committed, "the next attempt started at the killed one's checkpoint");
    assert.ok(r!.committed >= 5 * SEGMENT);
    assert.ok(r!.reread <= SEGMENT, `${r!.reread} rows read again: at most one segment (${SEGMENT})`);
    assert.equal(r!.job.attemptsHistory.length, 2);

    const { job: again } = await requestExport(fx.p.ada, { dataset: "events", format: "csv", compression: "gzip" });
    await drainJobs();
    const clean = (await db().job.findUniqueOrThrow({ where: { id: again.id } })).result as ExportResult;
    assert.equal(clean.resumedFrom, 0);
    assert.equal(r!.result.rows, clean.rows);
    assert.equal(r!.result.files[0]!.sha256, clean.files[0]!.sha256, "the same bytes: the same gzip members");
  });

  test("each part of a split export continues after its own last checkpoint", async () => {
    const request = { dataset: "events", format: "jsonl", compression: "gzip", partRows: 15_000 } as const;
    const { job } = await requestExport(fx.p.ada, request);
    const caught = await killMidFile(job.id, 5);
    assert.ok(caught.length >= 1, "a part was writing its file");
    const files = await resumedFiles(caught);
    for (const f of files) {
      console.log(`[test] part ${f.result.part}: committed ${f.committed} rows at the kill, ${f.reread} re-read`);
      assert.equal(f.result.resumedFrom, f.committed, "the part's next attempt started at its checkpoint");
      assert.ok(f.reread <= SEGMENT, `${f.reread} rows read again: at most one segment (${SEGMENT})`);
    }
    assert.ok(
      files.some((f) => f.committed > 0),
      "a part was killed past its first segment",
    );

    const { job: again } = await requestExport(fx.p.ada, request);
    await drainJobs();
    const partsOf = async (id: string) =>
      (await db().job.findMany({ where: { parentId: id } }))
        .map((c) => c.result as PartResult)
        .sort((a, b) => a.part - b.part);
    const killed = await partsOf(job.id);
    const clean = await partsOf(again.id);
    assert.equal(killed.length, clean.length);
    for (let i = 0; i < killed.length; i++) {
      assert.deepEqual(killed[i]!.range, clean[i]!.range);
      assert.equal(killed[i]!.rows, clean[i]!.rows);
      assert.equal(killed[i]!.sha256, clean[i]!.sha256, `part ${i + 1}: the same bytes as the uninterrupted run`);
    }
  });
});
