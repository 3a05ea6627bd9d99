import { test } from "node:test";
import assert from "node:assert/strict";
import { formatScheduleReport, runScheduleChaos } from "../chaos/schedules-harness";
import { useTestDatabase } from "../helpers/db";

const fx = useTestDatabase({ seed: 0.001 });

test("schedule chaos, short: 7 schedules firing every second on 3 workers through SIGKILLs and an 8 s SIGSTOP of all — each occurrence at most once, every policy held", async () => {
  const report = await runScheduleChaos({
    databaseUrl: fx.database.url,
    principal: fx.p.ada,
    workers: 3,
    concurrency: 4,
    durationMs: 25_000,
    killEveryMs: 5_000,
    stopMs: 8_000,
    // Shorter than the product's 5 s, so an 8 s stop misses several occurrences.
    missedAfterMs: 2_000,
    overlapSleepMs: 2_500,
    log: () => {},
  });
  console.log(formatScheduleReport(report));
  assert.ok(report.kills >= 1, "at least one worker was SIGKILLed");
  assert.ok(report.stop.ms >= 8_000, "every worker was stopped for 8 s");
  // Every check on its own, so a failure names itself; lag is printed above, never asserted (a busy machine).
  for (const c of report.checks) assert.ok(c.ok, `${c.name}: ${c.detail}`);
  assert.equal(report.ok, true);
});
