import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { z } from "zod";
import { db, pool } from "@/lib/db";
import { eventHub, JOB_EVENTS_CHANNEL, type JobEvent } from "@/lib/events/hub";
import { parseJobEvent } from "@/lib/events/payload";
import { enqueueJob } from "@/lib/jobs/enqueue";
import { PermanentError } from "@/lib/jobs/errors";
import { runJob } from "@/lib/jobs/runner";
import { defineTask, type JobContext } from "@/lib/jobs/task";
import { dispatchToRunner } from "../../worker/dispatch";
import { useTestDatabase } from "../helpers/db";
import { drainJobs } from "../helpers/fixtures";

type Behaviour = (ctx: JobContext<{ n: number }>) => Promise<unknown>;
let behaviour: Behaviour = async () => ({ ok: true });

const testTask = defineTask({
  type: "test_task",
  queue: "bulk",
  inputSchema: z.object({ n: z.number().int() }),
  retry: { maxAttempts: 3, initialBackoffMs: 0, maxBackoffMs: 0, multiplier: 2, jitter: "none" },
  timeoutMs: 5_000,
  leaseMs: 5_000,
  handler: (ctx) => behaviour(ctx),
});

const fx = useTestDatabase({ seed: 0.001, tasks: [testTask] });

async function drain(): Promise<void> {
  await drainJobs({ "bulk:test_task": dispatchToRunner("test_task") });
}

async function enqueue(n = 1) {
  const { job } = await enqueueJob({ tenantId: fx.p.acmeId, type: "test_task", input: { n } });
  return job.id;
}

const attemptsOf = (jobId: string) => db().jobAttempt.findMany({ where: { jobId }, orderBy: { attempt: "asc" } });

describe("runner", () => {
  test("success stores the result and one succeeded attempt", async () => {
    behaviour = async (ctx) => ({ doubled: ctx.input.n * 2 });
    const id = await enqueue(21);
    await drain();
    const job = await db().job.findUniqueOrThrow({ where: { id } });
    assert.equal(job.status, "succeeded");
    assert.deepEqual(job.result, { doubled: 42 });
    assert.ok(job.finishedAt && job.startedAt);
    assert.equal(job.leaseOwner, null);
    const attempts = await attemptsOf(id);
    assert.deepEqual(
      attempts.map((a) => a.outcome),
      ["succeeded"],
    );
  });

  test("a retryable failure retries within budget, then the job fails with every attempt recorded", async () => {
    behaviour = async () => {
      throw new Error("downstream 503");
    };
    const id = await enqueue();
    await drain();
    const job = await db().job.findUniqueOrThrow({ where: { id } });
    assert.equal(job.status, "failed");
    assert.equal(job.attempts, 3);
    assert.equal(job.errorClass, "retryable");
    assert.equal(job.errorMessage, "downstream 503");
    const attempts = await attemptsOf(id);
    assert.deepEqual(
      attempts.map((a) => [a.attempt, a.outcome, a.errorClass]),
      [
        [1, "failed", "retryable"],
        [2, "failed", "retryable"],
        [3, "failed", "retryable"],
      ],
    );
    assert.ok(attempts.every((a) => a.errorStack?.includes("downstream 503")));
  });

  test("a failed attempt with budget left is retrying, and the next attempt can succeed", async () => {
    behaviour = async (ctx) => {
      if (ctx.job.attempt === 1) throw new Error("flaky");
      return { attempt: ctx.job.attempt };
    };
    const id = await enqueue();
    await drain();
    const job = await db().job.findUniqueOrThrow({ where: { id } });
    assert.equal(job.status, "succeeded");
    assert.deepEqual(job.result, { attempt: 2 });
    assert.deepEqual(
      (await attemptsOf(id)).map((a) => a.outcome),
      ["failed", "succeeded"],
    );
  });

  test("a permanent error dead-letters at once", async () => {
    behaviour = async () => {
      throw new PermanentError("403 from the bucket");
    };
    const id = await enqueue();
    await drain();
    const job = await db().job.findUniqueOrThrow({ where: { id } });
    assert.equal(job.status, "failed");
    assert.equal(job.attempts, 1);
    assert.equal(job.errorClass, "permanent");
  });

  test("input that fails its schema is permanent and names the field", async () => {
    behaviour = async () => assert.fail("the handler must not run");
    const id = await enqueue();
    await db().job.update({ where: { id }, data: { input: { n: "seven" } } });
    await drain();
    const job = await db().job.findUniqueOrThrow({ where: { id } });
    assert.equal(job.status, "failed");
    assert.equal(job.errorClass, "permanent");
    assert.match(job.errorMessage ?? "", /^Invalid job input: n: /);
  });

  test("a timeout aborts the handler and counts as a retryable failure", async () => {
    behaviour = (ctx) =>
      new Promise((_, reject) =>
        ctx.signal.addEventListener("abort", () => reject(new Error("aborted")), { once: true }),
      );
    testTask.timeoutMs = 200;
    const id = await enqueue();
    await drain().finally(() => (testTask.timeoutMs = 5_000));
    const attempts = await attemptsOf(id);
    assert.equal(attempts.length, 3);
    assert.ok(attempts.every((a) => a.errorClass === "timeout"));
    assert.equal((await db().job.findUniqueOrThrow({ where: { id } })).status, "failed");
  });

  test("fencing: once another claim took the job, the stale attempt's writes change nothing", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    behaviour = async (ctx) => {
      ctx.progress({ done: 5, total: 10 });
      started();
      await gate;
      ctx.progress({ done: 9 });
      return { stale: true };
    };
    const id = await enqueue();
    const outcome = runJob(id, { workerId: "stale-worker", log: () => {} });
    await running;
    await sleep(400); // let the first progress write land
    // Another worker takes over (as after an expired lease): a new fencing token.
    await db().job.update({ where: { id }, data: { fencingToken: { increment: 1 }, leaseOwner: "new-worker" } });
    release();
    assert.equal(await outcome, "lost");
    const job = await db().job.findUniqueOrThrow({ where: { id } });
    assert.equal(job.status, "running", "the stale attempt did not complete the job");
    assert.equal(job.leaseOwner, "new-worker");
    assert.equal(job.result, null);
    assert.equal(Number(job.progressDone), 5, "the stale progress write was refused");
    assert.deepEqual(
      (await attemptsOf(id)).map((a) => a.outcome),
      ["lost"],
    );
  });

  test("progress never moves backwards, and every change notifies with a rising sequence", async () => {
    const events: JobEvent[] = [];
    behaviour = async (ctx) => {
      ctx.progress({ done: 10, total: 100, unit: "rows", stage: "work" });
      await sleep(300);
      ctx.progress({ done: 4 });
      await sleep(300);
      ctx.progress({ done: 60 });
      return {};
    };
    const id = await enqueue();
    const unsubscribe = await eventHub().subscribe({ jobId: id }, (e) => events.push(e));
    await drain();
    await sleep(100);
    unsubscribe();
    const seqs = events.map((e) => e.seq);
    assert.deepEqual(
      seqs,
      [...seqs].sort((a, b) => a - b),
      "sequence numbers rise",
    );
    assert.equal(new Set(seqs).size, seqs.length, "no sequence number repeats");
    const dones = events.map((e) => Number(e.done));
    assert.deepEqual(
      dones,
      [...dones].sort((a, b) => a - b),
      "done never decreases",
    );
    assert.equal(events.at(-1)?.status, "succeeded");
    assert.ok(events.some((e) => e.status === "running"));
    assert.ok(events.every((e) => e.tenantId === fx.p.acmeId));
  });
});

describe("the process's event hub", () => {
  test("a change of progress.detail alone is an event: seq moves, so streams hear of it", async () => {
    const id = await enqueue(7);
    const seqOf = async () =>
      Number((await pool().query<{ seq: string }>("SELECT seq::text FROM jobs WHERE id = $1", [id])).rows[0]!.seq);
    const before = await seqOf();
    await pool().query(`UPDATE jobs SET progress_detail = '{"good": 2500, "bad": 1}' WHERE id = $1`, [id]);
    const after = await seqOf();
    assert.equal(after, before + 1, "a new detail bumps seq");
    await pool().query(`UPDATE jobs SET progress_detail = '{"bad": 1, "good": 2500}' WHERE id = $1`, [id]);
    assert.equal(await seqOf(), after, "the same detail again does not");
  });

  test("a new job's notification (a statement trigger) and an update's (a row trigger) carry the same fields", async () => {
    const listener = await pool().connect();
    const payloads: string[] = [];
    listener.on("notification", (m) => {
      if (m.channel === JOB_EVENTS_CHANNEL && m.payload) payloads.push(m.payload);
    });
    try {
      await listener.query(`LISTEN ${JOB_EVENTS_CHANNEL}`);
      const id = await enqueue(7);
      await pool().query(`UPDATE jobs SET progress_message = 'touched' WHERE id = $1`, [id]);
      for (let i = 0; i < 100 && payloads.filter((p) => p.includes(id)).length < 2; i++) await sleep(20);
      const [inserted, updated] = payloads.filter((p) => p.includes(id)).map((p) => JSON.parse(p) as object);
      assert.ok(inserted && updated, `two notifications: ${payloads.join("\n")}`);
      assert.deepEqual(Object.keys(inserted), Object.keys(updated));
      for (const p of payloads.filter((x) => x.includes(id))) assert.ok(parseJobEvent(p).ok, p);
      assert.equal((updated as { message: string }).message, "touched");
    } finally {
      await listener.query("UNLISTEN *").catch(() => {});
      listener.release();
    }
  });

  test("an event carries the progress detail the kinds word progress from, unless it is over 2 kB", async () => {
    const id = await enqueue(7);
    const got: JobEvent[] = [];
    const off = await eventHub().subscribe({ jobId: id }, (e) => got.push(e));
    try {
      const small = { good: 2500, bad: 1 };
      await pool().query(`UPDATE jobs SET progress_detail = $2::jsonb WHERE id = $1`, [id, JSON.stringify(small)]);
      const seqNow = async () =>
        Number((await pool().query<{ seq: string }>("SELECT seq::text FROM jobs WHERE id = $1", [id])).rows[0]!.seq);
      const first = await seqNow();
      for (let i = 0; i < 100 && !got.some((e) => e.seq === first); i++) await sleep(20);
      assert.deepEqual(got.find((e) => e.seq === first)?.detail, small, "the small detail rides along");
      await pool().query(`UPDATE jobs SET progress_detail = $2::jsonb WHERE id = $1`, [
        id,
        JSON.stringify({ note: "x".repeat(3000) }),
      ]);
      const second = await seqNow();
      for (let i = 0; i < 100 && !got.some((e) => e.seq === second); i++) await sleep(20);
      const big = got.find((e) => e.seq === second);
      assert.ok(big, "the large detail's change is an event too");
      assert.equal(big.detail, null, "the large one waits for the next snapshot");
    } finally {
      off();
    }
  });

  test("each listener gets the events of what it follows: a job, a tenant (and a job of it), or everything", async () => {
    const a = await enqueue(1);
    await sleep(200); // its own notification is delivered before anyone here follows it
    const got = {
      job: [] as string[],
      jobOfGlobex: [] as string[],
      acme: [] as string[],
      globex: [] as string[],
      all: [] as string[],
    };
    const hub = eventHub();
    const offs = [
      await hub.subscribe({ jobId: a }, (e) => got.job.push(e.jobId)),
      await hub.subscribe({ jobId: a, tenantId: fx.p.globexId }, (e) => got.jobOfGlobex.push(e.jobId)),
      await hub.subscribe({ tenantId: fx.p.acmeId }, (e) => got.acme.push(e.jobId)),
      await hub.subscribe({ tenantId: fx.p.globexId }, (e) => got.globex.push(e.jobId)),
      await hub.subscribe({}, (e) => got.all.push(e.jobId)),
    ];
    const b = (await enqueueJob({ tenantId: fx.p.acmeId, type: "test_task", input: { n: 2 } })).job.id;
    const g = (await enqueueJob({ tenantId: fx.p.globexId, type: "test_task", input: { n: 3 } })).job.id;
    await pool().query(`UPDATE jobs SET progress_message = 'touched' WHERE id = $1`, [a]);
    for (let i = 0; i < 100 && !(got.all.includes(a) && got.all.includes(g)); i++) await sleep(20);
    const unsubscribeGlobex = offs[3]!;
    unsubscribeGlobex();
    unsubscribeGlobex(); // twice: a no-op
    await pool().query(`UPDATE jobs SET progress_message = 'again' WHERE id = $1`, [g]);
    for (let i = 0; i < 100 && got.all.filter((x) => x === g).length < 2; i++) await sleep(20);
    for (const off of offs) off();

    assert.deepEqual(got.job, [a], "the job's own update, nothing else");
    assert.deepEqual(got.jobOfGlobex, [], "a job filter naming another tenant gets nothing");
    assert.deepEqual(got.acme, [b, a]);
    assert.deepEqual(got.globex, [g], "nothing after unsubscribing");
    assert.deepEqual(got.all, [b, g, a, g]);
  });
});
