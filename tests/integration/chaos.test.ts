import { test } from "node:test";
import assert from "node:assert/strict";
import { formatReport, runChaos } from "../chaos/harness";
import { useTestDatabase } from "../helpers/db";

const fx = useTestDatabase({ seed: 0.001 });

test("chaos, short: 300 jobs on 3 workers through SIGKILLs and terminated connections — nothing lost, nothing twice", async () => {
  const report = await runChaos({
    databaseUrl: fx.database.url,
    tenantId: fx.p.acmeId,
    jobs: 300,
    workers: 3,
    concurrency: 4,
    killEveryMs: 1_200,
    terminateEveryMs: 700,
    maxSleepMs: 150,
    poisonJobs: 1,
    timeoutMs: 120_000,
    log: () => {},
  });
  console.log(formatReport(report));
  assert.deepEqual(
    report.poison,
    { jobs: 1, deadLettered: 1, attempts: [3] },
    "the poison job ends dead-lettered after its budget",
  );
  assert.equal(report.lost, 0);
  assert.equal(report.effectRows, 300);
  assert.equal(report.jobsWithoutEffect, 0);
  assert.equal(report.completedTwice, 0);
  assert.equal(report.backwardTransitions, 0);
  assert.equal(report.overBudget, 0);
  assert.equal(report.overlappingAttempts, 0);
  assert.ok(report.kills.length >= 1, "at least one worker was killed");
  // How fast is measured by `npm run chaos` (goal ≤ 2 × lease), not asserted here: on a loaded
  // machine a timed check fails for the wrong reason. That every in-flight job came back is asserted above
  // (nothing lost) and here.
  for (const k of report.kills) {
    if (k.runnableMs !== null) assert.ok(Number.isFinite(k.runnableMs), `jobs of worker ${k.pid} runnable again`);
  }
  assert.equal(report.ok, true);
});
