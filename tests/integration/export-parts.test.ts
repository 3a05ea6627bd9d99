import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { once } from "node:events";
import { buffer } from "node:stream/consumers";
import { setTimeout as sleep } from "node:timers/promises";
import { createPause, resumePause } from "@/lib/admission/pauses";
import { db, pool } from "@/lib/db";
import { resetEnvCache } from "@/lib/env";
import { openExportDownload, requestExport } from "@/lib/exports/service";
import { splitRange } from "@/lib/exports/datasets";
import { createRowCounter } from "@/lib/exports/row-counter";
import type { PartResult } from "@/lib/exports/parts";
import { cancelJob, replayJob } from "@/lib/jobs/actions";
import { reap } from "@/lib/jobs/reaper";
import { cleanupExpiredExports } from "@/lib/exports/links";
import { getJob } from "@/lib/jobs/queries";
import { storage } from "@/lib/storage";
import { useTestDatabase } from "../helpers/db";
import { drainJobs } from "../helpers/fixtures";
import { unzip } from "../helpers/zip";
import { workerArgs } from "../helpers/worker";

const fx = useTestDatabase();

type Manifest = {
  rowCount: number;
  partial: boolean;
  snapshot: { lastId: string };
  files: { name: string; rows: number; size: number; sha256: string }[];
  missingParts: { part: number; status: string }[];
};

async function download(jobId: string) {
  const file = await openExportDownload(fx.p.ada, jobId);
  const entries = await unzip(await buffer(file.stream));
  const manifest = JSON.parse(entries.get("manifest.json")!.toString()) as Manifest;
  return { file, entries, manifest };
}

/** An export's parts, in part order. */
const children = async (id: string) =>
  (await db().job.findMany({ where: { parentId: id }, include: { attemptsHistory: true } })).sort(
    (a, b) => (a.input as { part: number }).part - (b.input as { part: number }).part,
  );

/** A pause on Acme's export parts: the parent plans and waits, the parts stay queued. */
const holdParts = () => createPause(fx.p.oscar, { queue: "bulk", type: "export_part", reason: "export-parts test" });

describe("split exports", () => {
  test("splitRange covers the ids exactly once", () => {
    assert.deepEqual(splitRange(1, 10, 3), [
      { from: 1, to: 3 },
      { from: 4, to: 6 },
      { from: 7, to: 10 },
    ]);
    assert.deepEqual(splitRange(5, 6, 4), [
      { from: 5, to: 5 },
      { from: 6, to: 6 },
    ]);
  });

  test("without partRows, an export above EXPORT_PART_ROWS splits only when at least two parts can run at once", async () => {
    const setEnv = (vars: Record<string, string | undefined>) => {
      for (const [k, v] of Object.entries(vars)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
      resetEnvCache();
    };
    const partsOf = (id: string) => db().job.count({ where: { parentId: id } });
    const exportOnce = async () => {
      const { job } = await requestExport(fx.p.ada, { dataset: "events", format: "csv" });
      await drainJobs();
      const done = await getJob(fx.p.ada, job.id);
      assert.equal(done.status, "succeeded");
      return { id: job.id, name: done.result!.files[0]!.name, parts: await partsOf(job.id) };
    };
    setEnv({ EXPORT_PART_ROWS: "2500", EXPORT_PARALLEL_PARTS: "4" });
    try {
      // No live worker serves the bulk queue: parts could not run at once, so one file.
      const alone = await exportOnce();
      assert.equal(alone.parts, 0);
      assert.match(alone.name, /^events-[0-9a-f]{8}\.csv$/);

      // A live bulk worker with four idle slots: split, as before.
      await db().worker.create({
        data: { id: "export-parts-test:bulk", host: "test", pid: 1, version: "test", queues: ["bulk"], concurrency: 4 },
      });
      const split = await exportOnce();
      assert.equal(split.parts, 4);
      assert.match(split.name, /^events-[0-9a-f]{8}\.zip$/);

      // The same slots, but room for one part at a time on this host: one file again.
      setEnv({ EXPORT_PARALLEL_PARTS: "1" });
      assert.equal((await exportOnce()).parts, 0);
    } finally {
      await db().worker.deleteMany({ where: { id: "export-parts-test:bulk" } });
      setEnv({ EXPORT_PART_ROWS: undefined, EXPORT_PARALLEL_PARTS: undefined });
    }
  });

  test("a large export fans out, waits without a slot, and assembles a zip whose manifest matches the snapshot", async () => {
    const pause = await holdParts();
    const { job } = await requestExport(fx.p.ada, { dataset: "events", format: "csv", partRows: 2500 });
    await drainJobs();

    const waiting = await db().job.findUniqueOrThrow({ where: { id: job.id } });
    assert.equal(waiting.status, "running");
    assert.ok(waiting.waitingSince, "waiting for its parts");
    assert.equal(waiting.admittedAt, null, "holds no admission slot");
    assert.equal(waiting.leaseOwner, null, "holds no lease");
    const parts = await children(job.id);
    assert.equal(parts.length, 4);
    assert.ok(parts.every((c) => c.queue === "bulk" && c.status === "queued"));
    const { rows: expected } = await pool().query<{ n: number }>(
      "SELECT count(*)::int AS n FROM events WHERE tenant_id = $1",
      [fx.p.acmeId],
    );

    // Rows added after the plan are not in the export: one snapshot for every part.
    await pool().query(
      `INSERT INTO events (tenant_id, customer_id, type, source, payload, message, occurred_at)
       SELECT tenant_id, customer_id, type, source, payload, 'after the plan', now() FROM events
       WHERE tenant_id = $1 LIMIT 50`,
      [fx.p.acmeId],
    );
    await resumePause(fx.p.oscar, pause.id);
    await drainJobs();

    const done = await getJob(fx.p.ada, job.id);
    assert.equal(done.status, "succeeded");
    assert.equal(done.progress.done, expected[0]!.n);
    assert.equal(done.result?.files.length, 1);
    assert.match(done.result!.files[0]!.name, /^events-[0-9a-f]{8}\.zip$/);

    const { entries, manifest } = await download(job.id);
    assert.equal(manifest.rowCount, expected[0]!.n, "exactly the rows that existed at the plan");
    assert.equal(manifest.partial, false);
    assert.deepEqual([...entries.keys()].sort(), [...manifest.files.map((f) => f.name), "manifest.json"].sort());
    for (const f of manifest.files) {
      const bytes = entries.get(f.name)!;
      assert.equal(bytes.length, f.size);
      assert.equal(createHash("sha256").update(bytes).digest("hex"), f.sha256, `${f.name}'s sha256`);
      assert.equal(createRowCounter("csv")(bytes) - 1, f.rows, `${f.name}: its rows (after the header)`);
    }
    assert.ok(![...entries.values()].some((b) => b.includes("after the plan")));

    // The part files leave storage in the workers' cleanup, once the export's end is committed.
    const before = await children(job.id);
    assert.ok(await storage().open((before[0]!.result as PartResult).key), "kept until the export's end is committed");
    await cleanupExpiredExports();
    const history = await children(job.id);
    for (const c of history) {
      assert.deepEqual(
        c.attemptsHistory.map((a) => a.outcome),
        ["succeeded"],
        "each part ran once",
      );
      assert.equal(await storage().open((c.result as PartResult).key), null, "part files are removed once zipped");
      assert.equal((c.result as { fileDeleted?: boolean }).fileDeleted, true);
    }
    const parent = await db().jobAttempt.findMany({
      where: { jobId: job.id },
      orderBy: [{ attempt: "asc" }, { resume: "asc" }],
    });
    assert.deepEqual(
      parent.map((a) => a.outcome),
      ["waiting", "succeeded"],
    );
    // Gathering the parts resumed the first attempt: it spent no retry ("attempt 1 of 3", not "2 of 4").
    assert.deepEqual(
      parent.map((a) => [a.attempt, a.resume]),
      [
        [1, 0],
        [1, 1],
      ],
    );
    const row = await db().job.findUniqueOrThrow({ where: { id: job.id } });
    assert.deepEqual([row.attempts, row.maxAttempts], [1, 3]);
  });

  test("a small export stays one file", async () => {
    const { job } = await requestExport(fx.p.ada, { dataset: "customers", format: "csv" });
    await drainJobs();
    const done = await getJob(fx.p.ada, job.id);
    assert.equal(done.status, "succeeded");
    assert.match(done.result!.files[0]!.name, /\.csv$/);
    assert.equal(await db().job.count({ where: { parentId: job.id } }), 0);
  });

  test("a dead part fails the export, offering the finished parts as a partial result; replaying the part repairs it", async () => {
    const pause = await holdParts();
    const { job } = await requestExport(fx.p.ada, { dataset: "events", format: "jsonl", partRows: 2500 });
    await drainJobs();
    const parts = await children(job.id);
    // Part 3 cannot run: its input names no dataset any more (a permanent failure).
    await pool().query(`UPDATE jobs SET input = jsonb_set(input, '{request,dataset}', '"gone"') WHERE id = $1`, [
      parts[2]!.id,
    ]);
    await resumePause(fx.p.oscar, pause.id);
    await drainJobs();

    const failed = await getJob(fx.p.ada, job.id);
    assert.equal(failed.status, "failed");
    assert.match(
      failed.error!.message,
      new RegExp(
        `^1 of ${parts.length} parts failed \\(part 3: Invalid job input.*\\); the ${parts.length - 1} finished parts are offered`,
      ),
    );
    assert.equal(failed.result?.files[0]?.partial, true);
    assert.match(failed.result!.files[0]!.name, /-partial\.zip$/);
    const { entries, manifest } = await download(job.id);
    assert.equal(manifest.partial, true);
    assert.deepEqual(
      manifest.missingParts.map((m) => [m.part, m.status]),
      [[3, "failed"]],
    );
    assert.equal(entries.size, parts.length, "the finished part files and the manifest");
    // Replaying the dead part repairs its export: that part alone runs again, and the archive is
    // complete (tests/integration/export-repair.test.ts follows a repair through the API).
    const repair = await replayJob(fx.p.oscar, parts[2]!.id);
    assert.equal(repair.replayOfId, job.id);
    await drainJobs();
    assert.equal((await getJob(fx.p.ada, repair.id)).status, "succeeded");
    assert.equal(await db().job.count({ where: { parentId: repair.id } }), 1);
    const complete = await download(repair.id);
    assert.equal(complete.manifest.partial, false);
    assert.equal(complete.manifest.files.length, parts.length);
    assert.equal(complete.entries.size, parts.length + 1, "every part file and the manifest");
  });

  test("cancelling a waiting export cancels its parts", async () => {
    const pause = await holdParts();
    try {
      const { job } = await requestExport(fx.p.ada, { dataset: "events", format: "csv", partRows: 2500 });
      await drainJobs();
      const waiting = await getJob(fx.p.ada, job.id);
      assert.deepEqual(waiting.progress.children, {
        total: waiting.progress.children!.total,
        done: 0,
        failed: 0,
        retrying: 0,
        retries: [],
      });
      assert.ok(waiting.progress.children!.total >= 4, "the parent says how many parts it waits for, as data");
      const cancelled = await cancelJob(fx.p.ada, job.id, { reason: "wrong date range" });
      assert.equal(cancelled.status, "cancelled");
      assert.deepEqual(
        [cancelled.cancelRequested?.by, cancelled.cancelRequested?.reason],
        ["ada@acme.test", "wrong date range"],
        "who cancelled and why are fields of the job",
      );
      const [attempt] = await db().jobAttempt.findMany({ where: { jobId: job.id } });
      assert.equal(attempt!.outcome, "cancelled", "its suspended attempt ends cancelled, not 'waiting'");
      await reap({ deadAfterMs: 60_000 }); // the reaper stops a cancelled export's parts
      const parts = await children(job.id);
      assert.ok(parts.length >= 4);
      assert.deepEqual(new Set(parts.map((c) => c.status)), new Set(["cancelled"]));
      assert.deepEqual(
        parts.map((c) => c.childIndex),
        parts.map((_, i) => i),
        "parts keep their place in the fan-out",
      );
    } finally {
      await resumePause(fx.p.oscar, pause.id);
    }
  });

  test("a pause that cancels running jobs ends a waiting export and its parts", async () => {
    const hold = await holdParts();
    try {
      const { job } = await requestExport(fx.p.ada, { dataset: "events", format: "csv", partRows: 2500 });
      await drainJobs();
      const r = await createPause(fx.p.oscar, { queue: "interactive", type: "export", cancelRunning: true });
      assert.equal(r.cancelled, 1);
      const parent = await getJob(fx.p.ada, job.id);
      assert.equal(parent.status, "cancelled", "at once: it was running on no worker");
      await reap({ deadAfterMs: 60_000 });
      assert.deepEqual(new Set((await children(job.id)).map((c) => c.status)), new Set(["cancelled"]));
      const timeline = await db().jobTransition.findMany({ where: { jobId: job.id }, orderBy: { id: "asc" } });
      assert.equal(timeline.at(-1)?.toStatus, "cancelled", "the end is in the timeline");
      await resumePause(fx.p.oscar, r.id);
    } finally {
      await resumePause(fx.p.oscar, hold.id);
    }
  });

  test("a part file gone before assembly fails that attempt, not the worker", async () => {
    const parts = await holdParts();
    const { job } = await requestExport(fx.p.ada, { dataset: "events", format: "csv", partRows: 2500 });
    await drainJobs(); // planned; the parts wait
    // Hold the assembly too: the woken export waits for admission in a paused scope.
    const assembly = await createPause(fx.p.oscar, {
      queue: "interactive",
      type: "export",
      reason: "hold the assembly",
    });
    await resumePause(fx.p.oscar, parts.id);
    await drainJobs();
    const [first] = await children(job.id);
    assert.equal(first!.status, "succeeded");
    await storage().delete((first!.result as PartResult).key);
    await resumePause(fx.p.oscar, assembly.id);
    await drainJobs(); // must not throw: the worker lives on
    const after = await getJob(fx.p.ada, job.id);
    assert.equal(after.status, "retrying");
    assert.match(after.error!.message, /The file of part 1 is gone/);
    await cancelJob(fx.p.ada, job.id);
  });

  test("a worker killed mid-export: the export finishes, and no finished part is redone", async () => {
    const start = (): ChildProcess & { output: () => string } => {
      const child = spawn(process.execPath, workerArgs("--queues", "interactive,bulk", "--concurrency", "1"), {
        env: {
          ...process.env,
          DATABASE_URL: fx.database.url,
          ADMISSION_SWEEP_MS: "200",
          REAPER_INTERVAL_MS: "200",
          WORKER_DEAD_AFTER_MS: "1000",
        },
        stdio: ["ignore", "pipe", "pipe", "ipc"],
      });
      let out = "";
      child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
      child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
      return Object.assign(child, { output: () => out });
    };
    // Many small parts, so the kill lands while some are done and others are not.
    const { job } = await requestExport(fx.p.ada, { dataset: "events", format: "jsonl", partRows: 1000 });
    const first = start();
    let second: ReturnType<typeof start> | null = null;
    try {
      const deadline = Date.now() + 60_000;
      let finishedBeforeKill: string[] = [];
      while (Date.now() < deadline) {
        const { rows } = await pool().query<{ id: string }>(
          "SELECT id FROM jobs WHERE parent_id = $1 AND status = 'succeeded'",
          [job.id],
        );
        if (rows.length >= 2) {
          finishedBeforeKill = rows.map((r) => r.id);
          break;
        }
        await sleep(10);
      }
      assert.ok(finishedBeforeKill.length >= 2, `parts finished before the kill:\n${first.output()}`);
      console.log(`[test] killing the worker; finished: ${finishedBeforeKill.length}`);
      first.kill("SIGKILL");
      await once(first, "exit");
      second = start();
      console.log("[test] second worker started");
      const until = Date.now() + 90_000;
      // The export's progress, seen through the crash and the lost part's retry: never backwards.
      const seen: number[] = [];
      while (Date.now() < until) {
        const j = await db().job.findUniqueOrThrow({ where: { id: job.id } });
        seen.push(Number(j.progressDone));
        if (j.status === "succeeded" || j.status === "failed") break;
        await sleep(50);
      }
      assert.deepEqual(
        seen,
        [...seen].sort((a, b) => a - b),
        "progress never moved backwards",
      );
      const done = await getJob(fx.p.ada, job.id);
      assert.equal(done.status, "succeeded", second.output().slice(-3000));
      const parts = await children(job.id);
      assert.ok(parts.length >= 10, `${parts.length} parts`);
      console.log(
        `[test] attempts per part: ${parts.map((c) => c.attemptsHistory.map((a) => a.outcome).join("+")).join(", ")}`,
      );
      for (const c of parts) {
        assert.equal(
          c.attemptsHistory.filter((a) => a.outcome === "succeeded").length,
          1,
          `part ${c.id} succeeded exactly once`,
        );
        if (finishedBeforeKill.includes(c.id)) {
          assert.equal(c.attemptsHistory.length, 1, "a part finished before the kill never ran again");
        }
      }
      const { manifest } = await download(job.id);
      const { rows: n } = await pool().query<{ n: number }>(
        "SELECT count(*)::int AS n FROM events WHERE tenant_id = $1 AND id <= $2",
        [fx.p.acmeId, manifest.snapshot.lastId],
      );
      assert.equal(manifest.rowCount, n[0]!.n);
    } finally {
      for (const w of [first, second]) {
        if (w && w.exitCode === null && w.signalCode === null) {
          w.kill("SIGTERM");
          await once(w, "exit");
        }
      }
    }
  });
});
