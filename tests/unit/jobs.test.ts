import { test } from "node:test";
import assert from "node:assert/strict";
import { Batcher } from "@/lib/batcher";
import { canonicalJson } from "@/lib/jobs/enqueue";
import { AbortReason, classifyError, errorForHttpStatus, PermanentError, RateLimitedError } from "@/lib/jobs/errors";
import { backoffMs } from "@/lib/jobs/retry";
import type { RetryPolicy } from "@/lib/jobs/task";

const policy: RetryPolicy = {
  maxAttempts: 5,
  initialBackoffMs: 1000,
  maxBackoffMs: 10_000,
  multiplier: 3,
  jitter: "none",
};

test("backoff grows by the multiplier and is capped", () => {
  assert.deepEqual(
    [1, 2, 3, 4].map((a) => backoffMs(policy, a)),
    [1000, 3000, 9000, 10_000],
  );
});

test("full jitter draws from [0, backoff]", () => {
  const jittered = { ...policy, jitter: "full" as const };
  assert.equal(
    backoffMs(jittered, 2, () => 0),
    0,
  );
  assert.equal(
    backoffMs(jittered, 2, () => 0.5),
    1500,
  );
  assert.ok(backoffMs(jittered, 2, () => 0.999999) < 3000);
});

test("errors are classified", () => {
  assert.equal(classifyError(new PermanentError("bad")).errorClass, "permanent");
  const rl = classifyError(new RateLimitedError("slow down", 7000));
  assert.deepEqual([rl.errorClass, rl.retryAfterMs], ["rate_limited", 7000]);
  assert.equal(classifyError(new Error("boom")).errorClass, "retryable");
  assert.equal(classifyError("a string").message, "a string");
  const c = new AbortController();
  c.abort(new AbortReason("timeout", "Timed out after 5 ms"));
  assert.deepEqual(classifyError(new Error("aborted"), c.signal).errorClass, "timeout");
  const s = new AbortController();
  s.abort(new AbortReason("shutdown", "bye"));
  assert.equal(classifyError(new Error("x"), s.signal).errorClass, "shutdown");
});

test("canonical JSON ignores key order and undefined", () => {
  assert.equal(
    canonicalJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: undefined } }),
    '{"a":{"d":[1,{"y":2,"z":1}]},"b":1}',
  );
  assert.equal(canonicalJson({ a: 1, b: 2 }), canonicalJson({ b: 2, a: 1 }));
});

test("downstream HTTP answers map to error classes, Retry-After honoured", () => {
  const now = Date.UTC(2026, 0, 1);
  const cls = (status: number, retryAfter?: string) =>
    classifyError(errorForHttpStatus(status, "hooks.example", retryAfter, now));
  assert.equal(cls(404).errorClass, "permanent");
  assert.equal(cls(403).errorClass, "permanent");
  assert.equal(cls(408).errorClass, "retryable");
  assert.equal(cls(503).errorClass, "retryable");
  assert.deepEqual([cls(429, "7").errorClass, cls(429, "7").retryAfterMs], ["rate_limited", 7000]);
  assert.equal(cls(429, new Date(now + 90_000).toUTCString()).retryAfterMs, 90_000);
  assert.equal(cls(429).retryAfterMs, 60_000);
  assert.equal(cls(500).message, "hooks.example answered HTTP 500");
});

test("the batcher sends a lone call at once and groups the calls that wait for a slot", async () => {
  const batches: number[][] = [];
  const gates: (() => void)[] = [];
  const batcher = new Batcher<number, number>(
    async (items) => {
      batches.push(items);
      await new Promise<void>((resolve) => gates.push(resolve));
      return items.map((i) => i * 10);
    },
    { maxBatch: 3, maxInFlight: 1 },
  );
  const first = batcher.push(1);
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(batches, [[1]], "alone: sent without waiting for company");
  // While it runs, four more calls wait: they go in batches of at most three, in order.
  const waiting = [2, 3, 4, 5].map((i) => batcher.push(i));
  await new Promise((r) => setImmediate(r));
  assert.equal(batches.length, 1, "one statement in flight at most");
  gates.shift()!();
  assert.equal(await first, 10);
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(batches, [[1], [2, 3, 4]]);
  gates.shift()!();
  await new Promise((r) => setImmediate(r));
  gates.shift()!();
  assert.deepEqual(await Promise.all(waiting), [20, 30, 40, 50]);
  assert.deepEqual(batches, [[1], [2, 3, 4], [5]]);
});

test("a failed batch rejects each of its calls, and the next batch still runs", async () => {
  let calls = 0;
  const batcher = new Batcher<string, string>(
    async (items) => {
      calls++;
      if (items.includes("bad")) throw new Error("boom");
      return items.map((i) => i.toUpperCase());
    },
    { maxBatch: 10, maxInFlight: 1 },
  );
  const results = await Promise.allSettled([batcher.push("ok"), batcher.push("bad")]);
  assert.deepEqual(
    results.map((r) => r.status),
    ["rejected", "rejected"],
  );
  assert.equal(await batcher.push("later"), "LATER");
  assert.equal(calls, 2);
});

test("an eager batcher sends before the event loop's turn ends; calls of the same task still go together", async () => {
  const batches: number[][] = [];
  const make = (eager: boolean) =>
    new Batcher<number, number>(
      async (items) => {
        batches.push(items);
        return items;
      },
      { maxBatch: 10, maxInFlight: 1, eager },
    );
  for (const eager of [true, false]) {
    batches.length = 0;
    const b = make(eager);
    const calls = Promise.all([b.push(1), b.push(2)]);
    // Eager: sent once this task's microtasks run, before any timer or I/O callback; lazy: at setImmediate.
    await Promise.resolve();
    const sentBeforeTurnEnded = batches.length > 0;
    await calls;
    assert.deepEqual(batches, [[1, 2]], "one batch for the calls of one task");
    assert.equal(sentBeforeTurnEnded, eager);
  }
});
