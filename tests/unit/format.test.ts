import { test } from "node:test";
import assert from "node:assert/strict";
import { formatBytes, formatDuration, localDay, localMidnight, percentDone, rateAndEta } from "@/lib/client/format";

test("sizes and durations read like people write them", () => {
  assert.equal(formatBytes(512), "512 B");
  assert.equal(formatBytes(1536), "1.5 KB");
  assert.equal(formatBytes(250 * 1024 * 1024), "250 MB");
  assert.equal(formatDuration(59_400), "59s");
  assert.equal(formatDuration(61_000), "1m 1s");
  assert.equal(formatDuration(3_720_000), "1h 2m");
});

test("percent, rate and ETA come from done, total and the start time", () => {
  const progress = {
    done: 250,
    total: 1000,
    unit: "rows",
    stage: null,
    message: null,
    detail: null,
    bytes: null,
    children: null,
  };
  assert.equal(percentDone({ status: "running", progress }), 25);
  assert.equal(percentDone({ status: "running", progress: { ...progress, total: null } }), null);
  assert.equal(percentDone({ status: "succeeded", progress }), 100);
  const startedAt = new Date(10_000).toISOString();
  const { rate, etaMs } = rateAndEta({ progress, startedAt, finishedAt: null }, 20_000);
  assert.equal(rate, 25);
  assert.equal(etaMs, 30_000);
});

test("a form's day is its local midnight, and that instant reads back as the same day", () => {
  const at = localMidnight("2026-03-10")!;
  assert.equal(at.getHours(), 0);
  assert.deepEqual(localDay(at.toISOString()), { day: "2026-03-10", midnight: true });
  assert.equal(localDay(localMidnight("2026-03-10", 1)!.toISOString()).day, "2026-03-11");
  assert.equal(localMidnight("2026-02-30"), null, "a day that does not exist");
  assert.equal(localDay(new Date(at.getTime() + 90 * 60_000).toISOString()).midnight, false);
});
