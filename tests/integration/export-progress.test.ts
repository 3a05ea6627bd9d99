/**
 * Progress that stays honest (issue 35, must-have 3): a split export's parent
 * counts its parts ("k of n parts done" as data), shows a part's retry where
 * it is (which part, which attempt of how many, when), never counts a part's
 * redone rows twice nor takes them back, and measures its rate over a recent
 * window kept by the database.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { TaskList } from "graphile-worker";
import { createPause, resumePause } from "@/lib/admission/pauses";
import { db, pool } from "@/lib/db";
import { exportStorageDir } from "@/lib/env";
import { attemptFileKey } from "@/lib/exports/files";
import { partFileName } from "@/lib/exports/parts";
import { requestExport } from "@/lib/exports/service";
import type { ExportRequest } from "@/lib/exports/schema";
import { replayOne } from "@/lib/jobs/actions";
import { getJob } from "@/lib/jobs/queries";
import { recentRate, RATE_WINDOW_MS } from "@/lib/jobs/progress-rate";
import { taskListFor } from "../../worker/task-list";
import { useTestDatabase } from "../helpers/db";
import { drainJobs } from "../helpers/fixtures";

const fx = useTestDatabase();

/** An export's parts, in part order. */
const partsOf = async (id: string) =>
  (await db().job.findMany({ where: { parentId: id } })).sort(
    (a, b) => (a.input as { part: number }).part - (b.input as { part: number }).part,
  );

describe("split export progress", () => {
  test("k of n parts done, a part's retry where it is, and its redone rows counted once", async () => {
    const hold = await createPause(fx.p.oscar, { queue: "bulk", type: "export_part", reason: "export-progress test" });
    const request: ExportRequest = { dataset: "events", format: "csv", compression: "none", partRows: 2500 };
    const { job } = await requestExport(fx.p.ada, request);
    await drainJobs(); // planned; the parts wait
    const parts = await partsOf(job.id);
    const n = parts.length;
    assert.ok(n >= 4, `${n} parts`);
    const waiting = await getJob(fx.p.ada, job.id);
    assert.deepEqual(waiting.progress.children, { total: n, done: 0, failed: 0, retrying: 0, retries: [] });

    // Part 3's first attempt streams all its rows, then cannot put its file in place (a directory
    // holds the name): a real failure after its rows were counted. Its second attempt writes
    // under another path and succeeds, redoing those rows.
    const third = parts[2]!;
    const blocked = path.join(
      exportStorageDir(),
      attemptFileKey(
        {
          id: third.id,
          tenantId: fx.p.acmeId,
          type: third.type,
          attempt: 1,
          resume: 0,
          maxAttempts: 3,
          createdById: null,
        },
        partFileName(request, 3, n),
        job.id,
      ),
    );
    await mkdir(blocked, { recursive: true });
    await writeFile(path.join(blocked, "in-the-way"), "x");

    // As an operator might: once part 3 failed, pause the parts again, so its retry waits where
    // the test can look at it (its backoff is 0–2 s).
    const tasks: TaskList = taskListFor();
    const runPart = tasks["bulk:export_part"]!;
    let held = null as { id: string } | null; // set by the task list above, when part 3 failed
    tasks["bulk:export_part"] = async (payload, helpers) => {
      await runPart(payload, helpers);
      const { rows } = await pool().query("SELECT 1 FROM jobs WHERE id = $1 AND status = 'retrying'", [third.id]);
      if (rows.length && !held) held = await createPause(fx.p.oscar, { queue: "bulk", type: "export_part" });
    };
    await resumePause(fx.p.oscar, hold.id);
    await drainJobs(tasks);
    assert.ok(held, "part 3 failed once");

    const after1 = await partsOf(job.id);
    const failedOnce = after1[2]!;
    assert.equal(failedOnce.status, "retrying");
    const counted = Number(failedOnce.progressDone);
    assert.ok(counted > 0, "its first attempt counted rows before it failed");
    const during = await getJob(fx.p.ada, job.id);
    const children = during.progress.children!;
    assert.equal(children.total, n);
    assert.equal(children.retrying, 1);
    assert.equal(children.failed, 0);
    assert.equal(children.done, after1.filter((p) => p.status === "succeeded").length, "k of n parts done, as data");
    assert.deepEqual(
      children.retries.map((r) => [r.index, r.status, r.attempt, r.maxAttempts, r.runAt]),
      [[2, "retrying", 2, 3, failedOnce.runAt.toISOString()]],
      "part 3 (index 2) waits for its attempt 2 of 3, due at its run_at",
    );
    const doneBefore = during.progress.done;

    // The retry runs: the parent's rows never go back, and end at exactly the rows exported.
    await resumePause(fx.p.oscar, held!.id);
    const seen: number[] = [doneBefore];
    for (let i = 0; i < 100; i++) {
      await drainJobs();
      const j = await getJob(fx.p.ada, job.id);
      seen.push(j.progress.done);
      if (j.status === "succeeded" || j.status === "failed") break;
      await sleep(100);
    }
    const done = await getJob(fx.p.ada, job.id);
    assert.equal(done.status, "succeeded");
    assert.deepEqual(
      seen,
      [...seen].sort((a, b) => a - b),
      "the parent's done never moved backwards",
    );
    const after = await partsOf(job.id);
    const rows = after.map((p) => (p.result as { rows: number }).rows);
    const total = rows.reduce((a, b) => a + b, 0);
    assert.equal(done.result!.rows, total);
    assert.equal(done.progress.done, total, "part 3's redone rows are counted once");
    assert.equal(Number(after[2]!.progressDone), rows[2], "and once in the part itself");
    assert.ok(rows[2]! >= counted);
    assert.equal(after[2]!.attempts, 2);
    assert.deepEqual(done.progress.children, { total: n, done: n, failed: 0, retrying: 0, retries: [] });
    assert.equal(done.progress.rate, null, "an ended job has no rate");
    await rm(blocked, { recursive: true, force: true });
  });

  test("a dead part replayed is counted once, as its replay, with its place", async () => {
    const hold = await createPause(fx.p.oscar, { queue: "bulk", type: "export_part", reason: "export-progress test" });
    try {
      const { job } = await requestExport(fx.p.ada, { dataset: "events", format: "csv", partRows: 2500 });
      await drainJobs();
      const parts = await partsOf(job.id);
      const n = parts.length;
      const third = parts[2]!;
      // Part 3 ran and counted rows, then died (as a worker would record it).
      await pool().query(
        `UPDATE jobs SET status = 'running', attempts = 1, started_at = now(), admitted_at = now() WHERE id = $1`,
        [third.id],
      );
      await pool().query(`UPDATE jobs SET progress_done = 900, progress_total = 2500 WHERE id = $1`, [third.id]);
      await pool().query(
        `UPDATE jobs SET status = 'retrying', attempts = 1, run_at = now() + interval '1 minute' WHERE id = $1`,
        [third.id],
      );
      await pool().query(`UPDATE jobs SET status = 'failed', finished_at = now() WHERE id = $1`, [third.id]);
      const dead = await getJob(fx.p.ada, job.id);
      assert.deepEqual(
        [dead.progress.done, dead.progress.children!.total, dead.progress.children!.failed],
        [900, n, 1],
      );

      // Replayed (as lib/jobs/actions' replayOne does): a new part of the same export.
      const original = await db().job.findUniqueOrThrow({ where: { id: third.id } });
      const replay = await db().$transaction((tx) => replayOne(tx, fx.p.oscar, original));
      assert.ok(replay);
      await pool().query(`UPDATE jobs SET status = 'running', attempts = 1, admitted_at = now() WHERE id = $1`, [
        replay.id,
      ]);
      await pool().query(`UPDATE jobs SET progress_done = 400, progress_total = 2500 WHERE id = $1`, [replay.id]);
      const redoing = await getJob(fx.p.ada, job.id);
      assert.deepEqual(
        [redoing.progress.children!.total, redoing.progress.children!.failed, redoing.progress.children!.retrying],
        [n, 0, 0],
        "the dead part no longer counts; its replay does",
      );
      assert.equal(
        redoing.progress.done,
        900,
        "rows redone below what was counted add nothing, and none are taken back",
      );
      await sleep(300); // past the roll-up's throttle of progress-only writes
      await pool().query(`UPDATE jobs SET progress_done = 1500 WHERE id = $1`, [replay.id]);
      assert.equal((await getJob(fx.p.ada, job.id)).progress.done, 1500, "only rows beyond count");
      // The replay's own first attempt fails: it is shown at its original's place.
      await pool().query(`UPDATE jobs SET status = 'retrying', run_at = now() + interval '1 minute' WHERE id = $1`, [
        replay.id,
      ]);
      assert.deepEqual(
        (await getJob(fx.p.ada, job.id)).progress.children!.retries.map((r) => [r.index, r.status, r.attempt]),
        [[2, "retrying", 2]],
      );
    } finally {
      await resumePause(fx.p.oscar, hold.id);
    }
  });
});

describe("the recent rate", () => {
  test("the database keeps a run's samples, 2 s apart but the newest (replaced within them); a new status starts over", async () => {
    const { job } = await requestExport(fx.p.ada, { dataset: "customers", format: "csv" });
    const id = job.id;
    const samples = async () =>
      ((await db().job.findUniqueOrThrow({ where: { id } })).progressSamples ?? null) as [number, number][] | null;
    await pool().query(`UPDATE jobs SET status = 'running', attempts = 1, started_at = now() WHERE id = $1`, [id]);
    assert.equal(await samples(), null, "a run starts with none");
    const write = (done: number) => pool().query(`UPDATE jobs SET progress_done = $2 WHERE id = $1`, [id, done]);
    await write(100);
    await sleep(2_100);
    await write(200);
    await write(300); // kept: 2 s after the sample before the newest
    await write(400); // within 2 s of the sample before the newest (200): replaces 300
    let s = (await samples())!;
    assert.deepEqual(
      s.map(([, d]) => d),
      [100, 200, 400],
    );
    assert.ok(s[1]![0] - s[0]![0] >= 2_000, "kept samples are 2 s apart or more");
    await sleep(2_100);
    await write(700);
    s = (await samples())!;
    assert.deepEqual(
      s.map(([, d]) => d),
      [100, 200, 400, 700],
    );
    const last = s[3]![0];
    const rate = recentRate(s, last);
    assert.ok(rate !== null && Math.abs(rate - 600 / ((last - s[0]![0]) / 1000)) < 1e-9);
    assert.equal(recentRate(s, last + RATE_WINDOW_MS), 0, "a stall of a whole window reads 0");
    const dto = await getJob(fx.p.ada, id);
    assert.deepEqual(dto.progress.samples, s);
    assert.ok(dto.progress.rate !== null && dto.progress.rate > 0 && dto.progress.rate <= rate!);

    // A failed attempt's wait: no samples, no rate; its next run starts a new window.
    await pool().query(`UPDATE jobs SET status = 'retrying' WHERE id = $1`, [id]);
    assert.equal(await samples(), null);
    assert.equal((await getJob(fx.p.ada, id)).progress.rate, null);
    await pool().query(`UPDATE jobs SET status = 'cancelled', finished_at = now() WHERE id = $1`, [id]);
  });
});
