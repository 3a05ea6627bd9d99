import { beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { admitAll } from "@/lib/admission/admitter";
import { z } from "zod";
import { db, pool } from "@/lib/db";
import { cancelJob, replayJob } from "@/lib/jobs/actions";
import { discardDeadLetters, listDeadLetters, replayDeadLetters } from "@/lib/jobs/dead-letters";
import { getJobHistory } from "@/lib/jobs/history";
import { enqueueJob } from "@/lib/jobs/enqueue";
import { jobStatuses } from "@/lib/jobs/queries";
import { PermanentError, RateLimitedError } from "@/lib/jobs/errors";
import { reap } from "@/lib/jobs/reaper";
import { runJob } from "@/lib/jobs/runner";
import { defineTask, type JobContext } from "@/lib/jobs/task";
import { dispatchToRunner } from "../../worker/dispatch";
import { useTestDatabase } from "../helpers/db";
import { drainJobs, isCode } from "../helpers/fixtures";

type Behaviour = (ctx: JobContext<{ n: number }>) => Promise<unknown>;
let behaviour: Behaviour = async () => ({});

const task = defineTask({
  type: "reliability_task",
  queue: "bulk",
  inputSchema: z.object({ n: z.number() }),
  retry: { maxAttempts: 3, initialBackoffMs: 0, maxBackoffMs: 0, multiplier: 2, jitter: "none" },
  timeoutMs: 10_000,
  leaseMs: 1_500,
  handler: (ctx) => behaviour(ctx),
});

const fx = useTestDatabase({ seed: 0.001, tasks: [task] });
beforeEach(() => {
  behaviour = async () => ({});
});

const drain = () => drainJobs({ [`${task.queue}:${task.type}`]: dispatchToRunner(task.type) });
const enqueue = async (maxAttempts?: number) =>
  (await enqueueJob({ tenantId: fx.p.acmeId, type: task.type, input: { n: 1 }, maxAttempts })).job.id;
const job = (id: string) => db().job.findUniqueOrThrow({ where: { id } });
const dispatches = async (id: string) =>
  (await pool().query(`SELECT count(*)::int AS n FROM graphile_worker.jobs WHERE key = $1`, [id])).rows[0].n as number;
const waitUntilRunning = async (id: string) => {
  for (let i = 0; i < 200 && (await job(id)).status !== "running"; i++) await sleep(10);
};

describe("cancel", () => {
  test("a queued job is cancelled at once, its dispatch removed, and never starts", async () => {
    let ran = false;
    behaviour = async () => (ran = true);
    const id = await enqueue();
    assert.equal(await dispatches(id), 1);
    const dto = await cancelJob(fx.p.ada, id);
    assert.equal(dto.status, "cancelled");
    assert.equal(await dispatches(id), 0);
    await drain();
    assert.equal(ran, false);
    assert.equal((await job(id)).attempts, 0);
  });

  test("a running job is signalled through NOTIFY and stops within a second", async () => {
    behaviour = (ctx) =>
      new Promise((_, reject) =>
        ctx.signal.addEventListener("abort", () => reject(new Error("stopped")), { once: true }),
      );
    const id = await enqueue();
    const outcome = runJob(id, { workerId: "w1", log: () => {} });
    await waitUntilRunning(id);
    await sleep(100);
    const t0 = Date.now();
    const dto = await cancelJob(fx.p.ada, id);
    assert.equal(dto.status, "running", "the request is recorded; the worker stops it");
    assert.equal(await outcome, "cancelled");
    const elapsed = Date.now() - t0;
    assert.ok(elapsed < 1000, `stopped in ${elapsed} ms`);
    const after = await job(id);
    assert.equal(after.status, "cancelled");
    assert.equal(after.errorClass, "cancelled");
    const history = await getJobHistory(fx.p.ada, id);
    assert.deepEqual(
      history.attempts.map((a) => a.outcome),
      ["cancelled"],
    );
    assert.deepEqual(
      history.transitions.map((t) => t.to),
      ["queued", "running", "cancelled"],
    );
  });

  test("a cancel that races another failure still ends cancelled, never retrying forever", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    behaviour = async () => {
      await gate; // ignores its signal, then fails for a reason of its own
      throw new Error("downstream 503");
    };
    const id = await enqueue();
    const outcome = runJob(id, { workerId: "w-race", log: () => {} });
    await waitUntilRunning(id);
    await cancelJob(fx.p.ada, id);
    release();
    assert.equal(await outcome, "cancelled");
    assert.equal((await job(id)).status, "cancelled");
  });

  test("cancelling a finished job is a conflict; another tenant's job is not found", async () => {
    const id = await enqueue();
    await drain();
    await assert.rejects(cancelJob(fx.p.ada, id), isCode("conflict"));
    await assert.rejects(cancelJob(fx.p.gus, id), isCode("not_found"));
    await assert.rejects(cancelJob(fx.p.ada, "nope"), isCode("not_found"));
  });
});

describe("replay and the dead-letter queue", () => {
  test("an operator replays a dead job: a new job, a fresh budget, linked and audited", async () => {
    behaviour = async () => {
      throw new PermanentError("bad credentials");
    };
    const id = await enqueue();
    await drain();
    assert.equal((await job(id)).status, "failed");
    await assert.rejects(replayJob(fx.p.ada, id), isCode("forbidden"), "members may not replay");
    await assert.rejects(replayJob(fx.p.gus, id), isCode("forbidden"));
    behaviour = async () => ({ fixed: true });
    const replay = await replayJob(fx.p.oscar, id);
    assert.notEqual(replay.id, id);
    assert.equal(replay.attempts, 0);
    assert.equal((await job(replay.id)).replayOfId, id);
    await drain();
    assert.equal((await job(replay.id)).status, "succeeded");
    await assert.rejects(replayJob(fx.p.oscar, replay.id), isCode("conflict"), "a succeeded job is not replayed");
    await assert.rejects(replayJob(fx.p.oscar, id), isCode("conflict"), "a dead job is replayed once");
    const audit = await db().auditLog.findFirstOrThrow({ where: { action: "job.replay", targetIds: { has: id } } });
    assert.equal(audit.actorUserId, fx.p.oscar.userId);
  });

  test("dead letters list by filter, replay all that match, and discard", async () => {
    behaviour = async (ctx) => {
      throw new PermanentError(ctx.input.n === 1 ? "HTTP 404 from hooks.example" : "other");
    };
    const ids = [await enqueue(), await enqueue(), await enqueue()];
    await drain();
    const list = await listDeadLetters(fx.p.oscar, { type: task.type, q: "hooks.example" });
    assert.ok(ids.every((id) => list.jobs.some((j) => j.id === id)));
    assert.equal(
      (await listDeadLetters(fx.p.gina, { type: task.type })).jobs.length,
      0,
      "Globex's operator sees no Acme dead letters",
    );
    await assert.rejects(listDeadLetters(fx.p.ada, {}), isCode("forbidden"));
    await assert.rejects(replayDeadLetters(fx.p.oscar, {}), isCode("invalid_input"));

    behaviour = async () => ({});
    const replayed = await replayDeadLetters(fx.p.oscar, { filter: { type: task.type, q: "hooks.example" } });
    assert.ok(replayed.matched >= 3);
    assert.equal(replayed.replayed, replayed.matched);
    assert.equal(
      (await listDeadLetters(fx.p.oscar, { type: task.type })).jobs.length,
      0,
      "replayed jobs left the queue",
    );
    await drain();
    const replays = await db().job.findMany({ where: { replayOfId: { in: ids } } });
    assert.equal(replays.length, 3);
    assert.ok(replays.every((r) => r.status === "succeeded"));

    behaviour = async () => {
      throw new PermanentError("nope");
    };
    const dead = await enqueue();
    await drain();
    const discarded = await discardDeadLetters(fx.p.oscar, { ids: [dead] });
    assert.deepEqual(discarded, { matched: 1, discarded: 1 });
    assert.ok((await job(dead)).discardedAt);
  });
});

describe("crash recovery", () => {
  async function simulateCrash(id: string, owner: string, leaseExpiresAt: Date) {
    // What a worker killed mid-attempt leaves behind: a claimed job and an open attempt.
    const j = await db().job.update({
      where: { id },
      data: {
        status: "running",
        attempts: { increment: 1 },
        fencingToken: { increment: 1 },
        leaseOwner: owner,
        leaseExpiresAt,
        startedAt: new Date(),
      },
    });
    await db().jobAttempt.create({
      data: { jobId: id, attempt: j.attempts, workerId: owner, fencingToken: j.fencingToken },
    });
  }

  test("an expired lease is reaped: the attempt is lost, the job runs again, the old token is fenced off", async () => {
    const id = await enqueue();
    await pool().query(`SELECT graphile_worker.remove_job($1)`, [id]); // as if its worker held it
    await simulateCrash(id, "ghost", new Date(Date.now() - 1000));
    const before = await job(id);
    const result = await reap({ deadAfterMs: 60_000 });
    assert.deepEqual(
      result.reapedJobs.map((r) => [r.id, r.status]),
      [[id, "retrying"]],
    );
    const reaped = await job(id);
    assert.equal(reaped.fencingToken, before.fencingToken + 1n);
    assert.equal(reaped.admittedAt, null, "its slot is freed: it waits for admission again");
    assert.equal(reaped.runAt.getTime(), before.runAt.getTime(), "at its old place in line");
    await admitAll();
    assert.equal(await dispatches(id), 1, "a fresh dispatch");
    await drain();
    assert.equal((await job(id)).status, "succeeded");
    const history = await getJobHistory(fx.p.ada, id);
    assert.deepEqual(
      history.attempts.map((a) => [a.outcome, a.error?.class ?? null]),
      [
        ["lost", "crashed"],
        ["succeeded", null],
      ],
    );
  });

  test("a dead worker is declared dead and its graphile locks released; its jobs wait for their leases", async () => {
    const id = await enqueue();
    await pool().query(`SELECT graphile_worker.remove_job($1)`, [id]);
    await db().worker.create({
      data: {
        id: "dead-worker",
        host: "h",
        pid: 1,
        version: "t",
        queues: [],
        concurrency: 1,
        graphileWorkerIds: ["pool-dead"],
        heartbeatAt: new Date(Date.now() - 60_000),
      },
    });
    await simulateCrash(id, "dead-worker", new Date(Date.now() + 60_000));
    const first = await reap({ deadAfterMs: 5_000, selfId: "me" });
    assert.deepEqual(first.deadWorkers, ["dead-worker"]);
    assert.deepEqual(
      first.reapedJobs,
      [],
      "a stalled worker stops its own attempt before the lease ends; nothing is taken early",
    );
    assert.equal((await db().worker.findUniqueOrThrow({ where: { id: "dead-worker" } })).state, "dead");
    await db().job.update({ where: { id }, data: { leaseExpiresAt: new Date(Date.now() - 1) } });
    const second = await reap({ deadAfterMs: 5_000 });
    assert.deepEqual(
      second.reapedJobs.map((r) => r.id),
      [id],
    );
    assert.equal((await reap({ deadAfterMs: 5_000, selfId: "dead-worker" })).deadWorkers.length, 0);
  });

  test("a dispatch locked in the name of no live worker (killed before its first heartbeat) is released once stale", async () => {
    const stale = await enqueue();
    const fresh = await enqueue();
    await admitAll();
    assert.equal((await dispatches(stale)) + (await dispatches(fresh)), 2);
    // What a pool killed right after fetching its local queue leaves: dispatches locked by an id
    // that no worker row records. The fresh one's worker may simply not have beaten yet.
    const lock = `UPDATE graphile_worker._private_jobs SET locked_by = $2, locked_at = now() - $3::interval,
                         attempts = attempts + 1 WHERE key = $1`;
    await pool().query(lock, [stale, "pool-never-recorded", "1 minute"]);
    await pool().query(lock, [fresh, "pool-just-started", "0 seconds"]);
    await reap({ deadAfterMs: 5_000 });
    const lockedBy = async (id: string) =>
      (await pool().query(`SELECT locked_by FROM graphile_worker.jobs WHERE key = $1`, [id])).rows[0]?.locked_by;
    assert.equal(await lockedBy(stale), null, "the stale lock is released");
    assert.equal(await lockedBy(fresh), "pool-just-started", "a young lock is left to its worker");
    await pool().query(`UPDATE graphile_worker._private_jobs SET locked_by = NULL, locked_at = NULL WHERE key = $1`, [
      fresh,
    ]);
    await drain();
    assert.equal((await job(stale)).status, "succeeded", "the released dispatch runs");
  });

  test("an admitted job whose dispatch is gone for good is dispatched again", async () => {
    const id = await enqueue();
    await pool().query(`SELECT graphile_worker.remove_job($1)`, [id]);
    await db().job.update({ where: { id }, data: { admittedAt: new Date(Date.now() - 5 * 60_000) } });
    const result = await reap({ deadAfterMs: 60_000 });
    assert.deepEqual(result.redispatched, [id]);
    await drain();
    assert.equal((await job(id)).status, "succeeded");
  });

  test("a job that dies with its worker every time ends in the dead-letter queue after its budget", async () => {
    const id = await enqueue(2);
    await pool().query(`SELECT graphile_worker.remove_job($1)`, [id]);
    for (let i = 0; i < 2; i++) {
      await simulateCrash(id, `crash-${i}`, new Date(Date.now() - 1));
      await reap({ deadAfterMs: 60_000 });
      await pool().query(`SELECT graphile_worker.remove_job($1)`, [id]);
    }
    const dead = await job(id);
    assert.equal(dead.status, "failed");
    assert.equal(dead.errorClass, "crashed");
    assert.equal(dead.attempts, 2);
  });

  test("a stale attempt is aborted when its progress write is refused", async () => {
    let aborted = false;
    behaviour = async (ctx) => {
      for (let i = 1; !ctx.signal.aborted && i < 500; i++) {
        ctx.progress({ done: i });
        await sleep(20);
      }
      aborted = ctx.signal.aborted;
      throw new Error("stopped");
    };
    const id = await enqueue();
    const outcome = runJob(id, { workerId: "w-stale", log: () => {} });
    await waitUntilRunning(id);
    await db().job.update({ where: { id }, data: { fencingToken: { increment: 1 } } });
    assert.equal(await outcome, "lost");
    assert.equal(aborted, true);
  });
});

test("rate-limited failures honour Retry-After", async () => {
  behaviour = async () => {
    throw new RateLimitedError("429 from api.example", 60_000);
  };
  const id = await enqueue();
  await drain();
  const j = await job(id);
  assert.equal(j.status, "retrying");
  assert.equal(j.errorClass, "rate_limited");
  const wait = j.runAt.getTime() - Date.now();
  assert.ok(wait > 55_000 && wait <= 60_000, `next attempt in ${wait} ms`);
});

test("checkpoints survive into the next attempt", async () => {
  behaviour = async (ctx) => {
    if (ctx.job.attempt === 1) {
      await ctx.checkpoint({ upTo: 42 });
      throw new Error("crash after the checkpoint");
    }
    return { resumedFrom: ctx.lastCheckpoint };
  };
  const id = await enqueue();
  await drain();
  assert.deepEqual((await job(id)).result, { resumedFrom: { upTo: 42 } });
});

test("the lifecycle only moves forward: every transition is checked in the database", async () => {
  const statuses = jobStatuses;
  const allowed = new Set([
    "scheduled>queued",
    "scheduled>cancelled",
    "queued>running",
    "queued>cancelled",
    "queued>failed",
    "running>succeeded",
    "running>failed",
    "running>cancelled",
    "running>retrying",
    "retrying>queued",
    "retrying>running",
    "retrying>cancelled",
    "retrying>failed",
    "succeeded>expired",
  ]);
  const id = await enqueue();
  await pool().query(`SELECT graphile_worker.remove_job($1)`, [id]);
  for (const from of statuses) {
    for (const to of statuses) {
      if (from === to) continue;
      // Put the job in `from` without the guard (a fresh row), then try the move.
      await pool().query(`DELETE FROM jobs WHERE id = $1`, [id]);
      await pool().query(
        `INSERT INTO jobs (id, tenant_id, type, queue, status, input, input_hash, updated_at) VALUES ($1, $2, 'reliability_task', 'bulk', $3, '{}', 'x', now())`,
        [id, fx.p.acmeId, from],
      );
      const moved = await pool()
        .query(`UPDATE jobs SET status = $2 WHERE id = $1`, [id, to])
        .then(
          () => true,
          (e: { code?: string }) => {
            assert.equal(e.code, "23514");
            return false;
          },
        );
      assert.equal(moved, allowed.has(`${from}>${to}`), `${from} → ${to}`);
    }
  }
});
