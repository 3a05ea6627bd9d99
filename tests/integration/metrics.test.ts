import { test } from "node:test";
import assert from "node:assert/strict";
import { AppError } from "@/lib/errors";
import { authorizeMetrics, renderMetrics } from "@/lib/ops/metrics";
import { useTestDatabase } from "../helpers/db";
import { drainJobs } from "../helpers/fixtures";
import { enqueueJob } from "@/lib/jobs/enqueue";
import { pool } from "@/lib/db";
import { resetEnvCache } from "@/lib/env";
import { rollupStats } from "@/lib/ops/stats";

const fx = useTestDatabase();

test("metrics report depth, dead letters, attempts and a duration histogram from the database", async () => {
  for (let i = 0; i < 3; i++) await enqueueJob({ tenantId: fx.p.acmeId, type: "probe", input: { sleepMs: 5 } });
  await drainJobs();
  await enqueueJob({
    tenantId: fx.p.globexId,
    type: "probe",
    input: { sleepMs: 0 },
    runAt: new Date(Date.now() + 3_600_000),
  });
  await pool().query(
    `INSERT INTO jobs (id, tenant_id, type, queue, status, input, input_hash, error_message, finished_at, updated_at)
     VALUES (gen_random_uuid(), $1, 'probe', 'bulk', 'failed', '{}', 'm', 'boom', now(), now())`,
    [fx.p.acmeId],
  );
  // Counters and the histogram read the rollup's totals: nothing until a tick has counted the attempts.
  assert.doesNotMatch((await renderMetrics()).body, /conveyor_attempts_total\{/);
  while (!(await rollupStats()).caughtUp);
  const { body, contentType } = await renderMetrics();
  assert.match(contentType, /text\/plain/);
  assert.match(body, /conveyor_jobs\{queue="bulk",type="probe",status="scheduled"\} 1/);
  assert.match(body, /conveyor_dead_letters\{type="probe"\} 1/);
  assert.match(body, /conveyor_attempts_total\{type="probe",outcome="succeeded"\} 3/);
  assert.match(body, /# TYPE conveyor_attempt_duration_seconds histogram/);
  assert.match(body, /conveyor_attempt_duration_seconds_count\{type="probe"\} 3/);
  assert.match(body, /conveyor_attempt_duration_seconds_bucket\{type="probe",le="\+Inf"\} 3/);
  // Buckets are cumulative: each at least the one before.
  const buckets = [
    ...body.matchAll(/conveyor_attempt_duration_seconds_bucket\{type="probe",le="([^"]+)"\} (\d+)/g),
  ].map((m) => Number(m[2]));
  assert.equal(buckets.length, 16, "the rollup's 15 runtime bounds and +Inf");
  assert.deepEqual(
    [...buckets].sort((a, b) => a - b),
    buckets,
  );
});

test("only platform admins and the metrics token may scrape", () => {
  process.env.METRICS_TOKEN = "metrics-token-for-this-test";
  resetEnvCache();
  try {
    assert.doesNotThrow(() => authorizeMetrics(null, "metrics-token-for-this-test"));
    assert.doesNotThrow(() => authorizeMetrics(fx.p.root, null));
    assert.throws(
      () => authorizeMetrics(fx.p.oscar, null),
      (e: unknown) => e instanceof AppError && e.code === "forbidden",
    );
    assert.throws(
      () => authorizeMetrics(null, "wrong"),
      (e: unknown) => e instanceof AppError && e.code === "forbidden",
    );
    assert.throws(
      () => authorizeMetrics(null, null),
      (e: unknown) => e instanceof AppError && e.code === "unauthorized",
    );
  } finally {
    delete process.env.METRICS_TOKEN;
    resetEnvCache();
  }
});
