/**
 * tus's lock on an upload, in Postgres: two PostgresLocker instances stand for
 * two app processes (each process's tus server has one).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { ERRORS } from "@tus/server";
import { pool } from "@/lib/db";
import { PostgresLocker } from "@/lib/uploads/locker";
import { useTestDatabase } from "../helpers/db";

useTestDatabase({ seed: false });

const never = new AbortController().signal;
const holderOf = async (id: string) =>
  (await pool().query<{ holder: string }>(`SELECT holder::text FROM upload_locks WHERE upload_id = $1`, [id])).rows[0]
    ?.holder;

test("a request on another process asks the holder to let go, and gets the lock once it does", async () => {
  const [a, b] = [new PostgresLocker({ renewMs: 100 }), new PostgresLocker({ renewMs: 100 })];
  const lockA = a.newLock("upload-1");
  const order: string[] = [];
  await lockA.lock(never, async () => {
    order.push("A asked to let go");
    await lockA.unlock();
  });
  const lockB = b.newLock("upload-1");
  const t0 = Date.now();
  await lockB.lock(never, () => {});
  order.push("B holds it");
  assert.deepEqual(order, ["A asked to let go", "B holds it"]);
  assert.ok(Date.now() - t0 < 2_000, "within about one renewal of the holder");
  await lockB.unlock();
  assert.equal(await holderOf("upload-1"), undefined, "unlock frees it");
});

test("within one process the holder is asked at once", async () => {
  const locker = new PostgresLocker({ renewMs: 60_000 });
  const first = locker.newLock("upload-2");
  await first.lock(never, () => first.unlock());
  const t0 = Date.now();
  const second = locker.newLock("upload-2");
  await second.lock(never, () => {});
  assert.ok(Date.now() - t0 < 1_000, "no wait for a renewal");
  await second.unlock();
});

test("a dead holder's lease expires; its late unlock does not free the next holder's lock", async () => {
  // A holder that never renews (its process died): the lease runs out.
  const dead = new PostgresLocker({ leaseMs: 300, renewMs: 60_000 }).newLock("upload-3");
  await dead.lock(never, () => {});
  const next = new PostgresLocker().newLock("upload-3");
  await next.lock(never, () => {});
  const holder = await holderOf("upload-3");
  assert.ok(holder);
  await dead.unlock();
  assert.equal(await holderOf("upload-3"), holder, "the lock stayed the new holder's");
  await next.unlock();
});

test("a holder that does not let go makes the waiter give up after its timeout, or when its request ends", async () => {
  const holding = new PostgresLocker({ renewMs: 50 }).newLock("upload-4");
  await holding.lock(never, () => {}); // ignores requests to let go
  const waiter = new PostgresLocker({ acquireTimeoutMs: 300 }).newLock("upload-4");
  await assert.rejects(
    waiter.lock(never, () => {}),
    (e: unknown) => e === ERRORS.ERR_LOCK_TIMEOUT,
  );
  const ac = new AbortController();
  const patient = new PostgresLocker({ acquireTimeoutMs: 30_000 }).newLock("upload-4");
  const pending = patient.lock(ac.signal, () => {});
  await sleep(100);
  ac.abort();
  await assert.rejects(pending, (e: unknown) => e === ERRORS.ERR_LOCK_TIMEOUT);
  await holding.unlock();
});
