/**
 * The downstream guard's adaptive in-flight limit (issue 34): AIMD on latency.
 * A call's duration is what the guard measures from its slot (acquired_at to
 * release); tests make a call slow by moving its slot's start back, so nothing
 * here depends on the clock of the machine running it.
 */
import { beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { acquire, DeferredError, downstreamStates, type DownstreamLimits, type Permit } from "@/lib/downstream";
import { pool } from "@/lib/db";
import { enqueueJob } from "@/lib/jobs/enqueue";
import { reap } from "@/lib/jobs/reaper";
import { useTestDatabase } from "../helpers/db";

const fx = useTestDatabase();
const KEY = "test:endpoint";
const adaptive: DownstreamLimits = { ratePerSecond: 1000, concurrency: 8, holdMs: 60_000, slowMs: 1_000 };

beforeEach(async () => {
  await pool().query(`DELETE FROM downstream_waiters`);
  await pool().query(`DELETE FROM downstream_slots`);
  await pool().query(`DELETE FROM downstreams`);
});

/** A running job: the guard frees the slots of holders that are not. */
async function holder(): Promise<string> {
  const { job } = await enqueueJob({ tenantId: fx.p.acmeId, type: "probe", input: { sleepMs: 0 } });
  await pool().query(`UPDATE jobs SET status = 'running', started_at = now() WHERE id = $1`, [job.id]);
  return job.id;
}

/** Acquires for a new holder: the permit, or the reason it was refused. */
async function tryAcquire(limits = adaptive): Promise<{ holder: string; permit: Permit | null; reason?: string }> {
  const h = await holder();
  try {
    return { holder: h, permit: await acquire(KEY, h, limits) };
  } catch (e) {
    if (!(e instanceof DeferredError)) throw e;
    return { holder: h, permit: null, reason: e.reason };
  }
}

/** The call of `holderId` began `ms` ago. */
const startedAgo = (holderId: string, ms: number) =>
  pool().query(
    `UPDATE downstream_slots SET acquired_at = now() - make_interval(secs => $2::float8 / 1000) WHERE holder = $1`,
    [holderId, ms],
  );

/** The attempt of `holderId` heartbeats now (its worker is alive): a hanging call of it is evidence. */
const heartbeat = (holderId: string) => pool().query(`UPDATE jobs SET heartbeat_at = now() WHERE id = $1`, [holderId]);

const limit = async () => (await downstreamStates([KEY])).get(KEY)!.limit;
const inFlight = async () => (await downstreamStates([KEY])).get(KEY)!.inFlight;

describe("adaptive in-flight limit", () => {
  test("starts at 2; each answer within slowMs adds one, up to the configured concurrency", async () => {
    const a = await tryAcquire();
    const b = await tryAcquire();
    const c = await tryAcquire();
    assert.ok(a.permit && b.permit);
    assert.equal(c.permit, null);
    assert.equal(c.reason, "concurrency");
    assert.equal(await limit(), 2);
    await a.permit.release("success");
    await b.permit.release("success");
    assert.equal(await limit(), 4);
    for (let i = 0; i < 10; i++) await (await tryAcquire()).permit!.release("success");
    assert.equal(await limit(), 8, "never above WEBHOOK_ENDPOINT_CONCURRENCY");
    // A fast endpoint at its limit: 8 in flight at once, the ninth waits.
    const held = [];
    for (let i = 0; i < 8; i++) held.push(await tryAcquire());
    assert.ok(held.every((h) => h.permit));
    assert.equal((await tryAcquire()).reason, "concurrency");
  });

  test("a slow answer halves the limit, once per round trip; at least 1", async () => {
    for (let i = 0; i < 6; i++) await (await tryAcquire()).permit!.release("success");
    assert.equal(await limit(), 8);
    const slow = [await tryAcquire(), await tryAcquire(), await tryAcquire()];
    for (const s of slow) await startedAgo(s.holder, 5_000);
    for (const s of slow) await s.permit!.release("success");
    assert.equal(await limit(), 4, "three slow answers begun before the cut halve it once");
    for (const expected of [2, 1, 1]) {
      const s = await tryAcquire();
      // A round trip later: this call began after the last cut.
      await pool().query(`UPDATE downstreams SET limit_cut_at = limit_cut_at - interval '1 hour'`);
      await startedAgo(s.holder, 5_000);
      await s.permit!.release("success");
      assert.equal(await limit(), expected);
    }
    // A slow endpoint holds one slot: the second call waits its turn.
    const first = await tryAcquire();
    assert.ok(first.permit);
    assert.equal((await tryAcquire()).reason, "concurrency");
  });

  test("a call still unanswered after slowMs halves the limit before any slow answer comes in", async () => {
    for (let i = 0; i < 6; i++) await (await tryAcquire()).permit!.release("success");
    assert.equal(await limit(), 8);
    const hanging = [await tryAcquire(), await tryAcquire(), await tryAcquire(), await tryAcquire()];
    for (const h of hanging) await startedAgo(h.holder, 2_000);
    // Their workers are alive: each attempt heartbeat after its call went slow.
    for (const h of hanging) await heartbeat(h.holder);
    // Four in flight, the limit cut to 4: the fifth waits.
    assert.equal((await tryAcquire()).reason, "concurrency");
    assert.equal(await limit(), 4);
    // Once per round trip: the same hanging calls do not cut it again.
    assert.equal((await tryAcquire()).reason, "concurrency");
    assert.equal(await limit(), 4);
  });

  test("a SIGKILLed worker's unanswered calls are no slow calls: the limit stays; their slots are freed, and parked callers woken, when the reaper takes the attempts back", async () => {
    for (let i = 0; i < 6; i++) await (await tryAcquire()).permit!.release("success");
    assert.equal(await limit(), 8);
    // A worker holds all eight slots, then is killed: its calls began 2 s ago, and its last
    // heartbeat (the worker's and each attempt's) came before they went slow.
    await pool().query(
      `INSERT INTO workers (id, host, pid, version, concurrency, heartbeat_at)
       VALUES ('killed', 'test', 1, 'test', 8, now() - interval '2 seconds')`,
    );
    const killed = [];
    for (let i = 0; i < 8; i++) killed.push(await tryAcquire());
    assert.ok(killed.every((k) => k.permit));
    const ids = killed.map((k) => k.holder);
    await pool().query(
      `UPDATE jobs SET lease_owner = 'killed', lease_expires_at = now() + interval '1 minute' WHERE id = ANY($1)`,
      [ids],
    );
    for (const k of killed) await startedAgo(k.holder, 2_000);
    await pool().query(`UPDATE jobs SET heartbeat_at = now() - interval '1900 milliseconds' WHERE id = ANY($1)`, [ids]);
    // Until its attempts are taken back the worker may only be stalled: its slots stay held,
    // but the calls are not evidence against the downstream.
    const parked = [await tryAcquire(), await tryAcquire(), await tryAcquire()];
    assert.ok(parked.every((p) => p.reason === "concurrency"));
    assert.equal(await limit(), 8, "a silent worker's hanging calls do not cut the limit");
    // A worker known to be gone (exited, or declared dead) is no evidence even with a late heartbeat.
    await heartbeat(ids[0]!);
    await pool().query(`UPDATE workers SET exited_at = now(), exit = 'SIGKILL' WHERE id = 'killed'`);
    assert.equal((await tryAcquire()).reason, "concurrency");
    assert.equal(await limit(), 8, "an exited worker's hanging calls do not cut the limit");
    await pool().query(`UPDATE workers SET exited_at = NULL, exit = NULL, state = 'dead' WHERE id = 'killed'`);
    assert.equal((await tryAcquire()).reason, "concurrency");
    assert.equal(await limit(), 8, "a dead worker's hanging calls do not cut the limit");
    // (The same call from a live worker is evidence: the rule is not "never cut".)
    await pool().query(`UPDATE workers SET state = 'running' WHERE id = 'killed'`);
    assert.equal((await tryAcquire()).reason, "concurrency");
    assert.equal(await limit(), 4, "a live worker's hanging call cuts the limit");
    await pool().query(`UPDATE downstreams SET adaptive_limit = 8, limit_cut_at = NULL`);

    // The parked callers wait, as the engine records a deferral; then the leases run out and the
    // reaper takes the attempts back.
    await pool().query(
      `UPDATE jobs SET status = 'retrying', run_at = now() + interval '10 minutes' WHERE id = ANY($1)`,
      [parked.map((p) => p.holder)],
    );
    await pool().query(`UPDATE jobs SET lease_expires_at = now() - interval '1 second' WHERE id = ANY($1)`, [ids]);
    const reaped = await reap({ deadAfterMs: 60_000 });
    assert.deepEqual(reaped.reapedJobs.map((r) => r.id).sort(), [...ids].sort());
    assert.equal(
      (await pool().query(`SELECT count(*)::int AS n FROM downstream_slots WHERE key = $1`, [KEY])).rows[0]!.n,
      0,
      "the taken-back attempts' slots are freed",
    );
    assert.equal(await inFlight(), 0);
    assert.equal(await limit(), 8, "and they taught the limit nothing");
    const { rows } = await pool().query<{ n: number }>(
      `SELECT count(*)::int AS n FROM jobs WHERE id = ANY($1) AND run_at <= now()`,
      [parked.map((p) => p.holder)],
    );
    assert.equal(rows[0]!.n, 3, "the parked callers are woken at once, not left for the sweep");
  });

  test("a releasing call wakes as many parked callers as the limit in force has room for", async () => {
    const a = await tryAcquire();
    const b = await tryAcquire();
    const parked = [await tryAcquire(), await tryAcquire(), await tryAcquire()];
    assert.ok(parked.every((p) => p.reason === "concurrency"));
    // Parked jobs are waiting, not running (as the engine records a deferral).
    await pool().query(
      `UPDATE jobs SET status = 'retrying', run_at = now() + interval '10 minutes' WHERE id = ANY($1)`,
      [parked.map((p) => p.holder)],
    );
    await startedAgo(a.holder, 5_000);
    await a.permit!.release("success");
    // Limit 2 → 1 with b still in flight: nobody is woken.
    const woken = async () =>
      (
        await pool().query<{ n: number }>(
          `SELECT count(*)::int AS n FROM jobs WHERE id = ANY($1) AND run_at <= now()`,
          [parked.map((p) => p.holder)],
        )
      ).rows[0]!.n;
    assert.equal(await woken(), 0);
    await b.permit!.release("success");
    // Fast: 1 → 2, nothing in flight: two are woken.
    assert.equal(await limit(), 2);
    assert.equal(await woken(), 2);
  });

  test("without slowMs the limit is the configured concurrency, fixed", async () => {
    const fixed: DownstreamLimits = { ratePerSecond: 1000, concurrency: 5, holdMs: 60_000 };
    const held = [];
    for (let i = 0; i < 5; i++) held.push(await tryAcquire(fixed));
    assert.ok(held.every((h) => h.permit));
    assert.equal((await tryAcquire(fixed)).reason, "concurrency");
    for (const h of held) await startedAgo(h.holder, 60_000);
    for (const h of held) await h.permit!.release("success");
    assert.equal(await limit(), 5);
  });
});
