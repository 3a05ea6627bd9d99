import { test } from "node:test";
import assert from "node:assert/strict";
import { z } from "zod";
import { parseJobEvent } from "@/lib/events/payload";
import {
  getTaskDefinition,
  redactInput,
  registerTask,
  registerWorkloads,
  sensitiveFields,
  taskDefinitions,
} from "@/lib/jobs/registry";
import { nextStateAfterFailure } from "@/lib/jobs/retry";
import { defineTask, defineWorkload } from "@/lib/jobs/task";

const secretTask = defineTask({
  type: "unit_secret",
  queue: "bulk",
  inputSchema: z.object({ url: z.string(), token: z.string() }),
  sensitive: ["token"],
  retry: { maxAttempts: 3, initialBackoffMs: 100, maxBackoffMs: 1_000, multiplier: 2, jitter: "none" },
  timeoutMs: 1_000,
  leaseMs: 1_000,
  handler: async () => null,
});

test("the engine refuses to guess: with no workload registered, a lookup names the missing import", () => {
  assert.throws(
    () => getTaskDefinition("export"),
    /No workloads are registered: the entry point must import @\/lib\/workloads/,
  );
});

test("workloads register their task types once; a second definition of a type is an error", () => {
  const workload = defineWorkload({ name: "unit", tasks: [secretTask] });
  registerWorkloads([workload]);
  registerWorkloads([workload]); // idempotent
  assert.equal(getTaskDefinition("unit_secret"), secretTask);
  assert.equal(getTaskDefinition("nope"), undefined);
  assert.deepEqual(
    taskDefinitions().map((d) => d.type),
    ["unit_secret"],
  );
  assert.throws(() => registerTask({ ...secretTask }), /registered twice/);
  assert.deepEqual(sensitiveFields(), ["token"]);
  assert.deepEqual(redactInput("unit_secret", { url: "https://x", token: "s3cret" }), {
    url: "https://x",
    token: "[redacted]",
  });
});

test("after a failed attempt: retry with backoff, dead-letter when out of budget, at once for crashes", () => {
  assert.deepEqual(nextStateAfterFailure(secretTask, 1, 3, { errorClass: "retryable" }), {
    status: "retrying",
    delayMs: 100,
  });
  assert.deepEqual(nextStateAfterFailure(secretTask, 3, 3, { errorClass: "retryable" }), {
    status: "failed",
    delayMs: 0,
  });
  assert.deepEqual(nextStateAfterFailure(secretTask, 1, 3, { errorClass: "crashed" }), {
    status: "retrying",
    delayMs: 0,
  });
  assert.equal(nextStateAfterFailure(secretTask, 1, 3, { errorClass: "permanent" }).status, "failed");
  assert.equal(nextStateAfterFailure(undefined, 1, 3, { errorClass: "crashed" }).status, "failed", "no definition");
  assert.deepEqual(nextStateAfterFailure(secretTask, 1, 3, { errorClass: "rate_limited", retryAfterMs: 7_000 }), {
    status: "retrying",
    delayMs: 7_000,
  });
});

test("a NOTIFY payload is parsed with a schema where it is received", () => {
  const payload = {
    tenantId: "t",
    jobId: "j",
    seq: 4,
    type: "export",
    status: "running",
    attempts: 1,
    done: 250,
    total: 1000,
    unit: "rows",
    stage: "waiting",
    message: null,
    bytes: 2048,
    samples: [
      [1_000, 100],
      [3_000, 250],
    ],
    children: {
      total: 5,
      done: 3,
      failed: 0,
      retrying: 1,
      retries: [{ index: 2, status: "retrying", attempt: 2, maxAttempts: 3, runAt: "2026-11-30T12:00:04.000Z" }],
    },
    cancelRequested: false,
    admission: null,
    at: "2026-11-30T12:00:00.000Z",
  };
  const ok = parseJobEvent(JSON.stringify(payload));
  assert.ok(ok.ok);
  assert.deepEqual(ok.event.children, payload.children);
  assert.deepEqual(ok.event.samples, payload.samples);
  // An older trigger's payload (no bytes, samples, children, cancel flag) still parses, with defaults.
  const { bytes: _b, samples: _s, children: _c, cancelRequested: _r, ...old } = payload;
  const older = parseJobEvent(JSON.stringify(old));
  assert.ok(older.ok);
  assert.deepEqual(
    [older.event.bytes, older.event.samples, older.event.children, older.event.cancelRequested],
    [null, null, null, false],
  );
  const counts = parseJobEvent(JSON.stringify({ ...payload, children: { total: 5, done: 3, failed: 0 } }));
  assert.ok(counts.ok);
  assert.deepEqual(counts.event.children, { total: 5, done: 3, failed: 0, retrying: 0, retries: [] });
  const bad = parseJobEvent(JSON.stringify({ ...payload, status: "exploded", seq: "4" }));
  assert.ok(!bad.ok);
  assert.match(bad.error, /status/);
  assert.match(bad.error, /seq/);
  assert.ok(!parseJobEvent("{not json").ok);
});
