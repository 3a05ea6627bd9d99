import { test } from "node:test";
import assert from "node:assert/strict";
import {
  formatBytes,
  formatDuration,
  formatTime,
  formatWindowEdge,
  localDay,
  localMidnight,
  percentDone,
  rateAndEta,
  retryLines,
  zoneLabel,
} from "@/lib/client/format";
import { formatInZone } from "@/lib/client/schedules";
import { failureCause, failureWords } from "@/lib/client/failures";
import { shortId } from "@/lib/ids";
import { recentRate, timeLeftMs } from "@/lib/jobs/progress-rate";

test("sizes and durations read like people write them", () => {
  assert.equal(formatBytes(512), "512 B");
  assert.equal(formatBytes(1536), "1.5 KB");
  assert.equal(formatBytes(250 * 1024 * 1024), "250 MB");
  assert.equal(formatDuration(59_400), "59s");
  assert.equal(formatDuration(61_000), "1m 1s");
  assert.equal(formatDuration(3_720_000), "1h 2m");
});

test("percent comes from done and total; rate and ETA from the recent samples, never the average since the start", () => {
  const progress = { done: 250, total: 1000, samples: null };
  assert.equal(percentDone({ status: "running", progress }), 25);
  assert.equal(percentDone({ status: "running", progress: { ...progress, total: null } }), null);
  assert.equal(percentDone({ status: "succeeded", progress }), 100);
  // Slow for a minute, then fast: the window (30 s) sees only the fast part.
  const samples: [number, number][] = [
    [60_000, 100],
    [70_000, 150],
    [80_000, 250],
  ];
  const { rate, etaMs } = rateAndEta({ status: "running", progress: { ...progress, samples } }, 80_000);
  assert.equal(rate, 150 / 20, "since the first sample (the window is longer than the run's samples)");
  assert.equal(etaMs, (750 / 7.5) * 1000);
  assert.deepEqual(rateAndEta({ status: "retrying", progress: { ...progress, samples } }, 80_000), {
    rate: null,
    etaMs: null,
  });
  assert.deepEqual(rateAndEta({ status: "running", progress }, 80_000), { rate: null, etaMs: null }, "no samples yet");
});

test("the recent rate: the last 30 s, a stall falls to 0, one sample or under a second is no rate", () => {
  const samples: [number, number][] = [
    [0, 0],
    [30_000, 3_000], // 100/s for the first 30 s
    [40_000, 13_000], // 1,000/s for 10 s
  ];
  // At 40 s: the window is 10..40 s; done at 10 s (interpolated) is 1,000.
  assert.equal(recentRate(samples, 40_000), 12_000 / 30);
  // Nothing since 40 s: at 70 s the window 40..70 s holds no progress.
  assert.equal(recentRate(samples, 70_000), 0);
  // At 55 s: the window 25..55 s; done at 25 s was 2,500, so 10,500 rows in 30 s.
  assert.equal(recentRate(samples, 55_000), 350);
  assert.equal(recentRate([[0, 10]], 5_000), null, "one sample has no baseline");
  assert.equal(
    recentRate(
      [
        [0, 0],
        [500, 100],
      ],
      500,
    ),
    null,
    "under a second",
  );
  // A clock behind the database's reads the rate as of the newest sample.
  assert.equal(recentRate(samples, 35_000), recentRate(samples, 40_000));
  assert.equal(timeLeftMs(13_000, 25_000, 400), 30_000);
  assert.equal(timeLeftMs(13_000, 25_000, 0), null, "a stalled job has no time left");
  assert.equal(timeLeftMs(13_000, null, 400), null);
});

test("a parent's parts in a retry read where they are", () => {
  const job = {
    status: "running" as const,
    progress: {
      done: 0,
      total: null,
      unit: "rows",
      stage: "waiting",
      message: null,
      detail: null,
      bytes: null,
      rate: null,
      samples: null,
      children: {
        total: 8,
        done: 3,
        failed: 0,
        retrying: 7,
        retries: [
          { index: 2, status: "retrying" as const, attempt: 2, maxAttempts: 3, runAt: new Date(14_000).toISOString() },
          { index: 4, status: "running" as const, attempt: 2, maxAttempts: 3, runAt: new Date(1_000).toISOString() },
          { index: 5, status: "retrying" as const, attempt: 3, maxAttempts: 3, runAt: new Date(9_900).toISOString() },
        ],
      },
    },
  };
  assert.deepEqual(retryLines(job, "parts", 10_000), [
    "part 3 of 8 retrying, attempt 2 of 3, next in 4s",
    "part 5 of 8 retrying, attempt 2 of 3, running",
    "part 6 of 8 retrying, attempt 3 of 3, starting",
    "and 4 more parts retrying",
  ]);
  assert.deepEqual(
    retryLines({ ...job, status: "succeeded" as const }, "parts", 10_000),
    [],
    "an ended parent has none",
  );
  assert.deepEqual(retryLines({ ...job, progress: { ...job.progress, children: null } }), []);
});

test("a form's day is its local midnight, and that instant reads back as the same day", () => {
  const at = localMidnight("2026-03-10")!;
  assert.equal(at.getHours(), 0);
  assert.deepEqual(localDay(at.toISOString()), { day: "2026-03-10", midnight: true });
  assert.equal(localDay(localMidnight("2026-03-10", 1)!.toISOString()).day, "2026-03-11");
  assert.equal(localMidnight("2026-02-30"), null, "a day that does not exist");
  assert.equal(localDay(new Date(at.getTime() + 90 * 60_000).toISOString()).midnight, false);
});

test("one time formatter: the zone it is given, named by its offset, the same words in every style", () => {
  const at = "2026-12-03T07:14:05.000Z";
  assert.equal(formatTime(at, "UTC"), "3 Dec 2026, 07:14:05 UTC");
  assert.equal(formatTime(at, "America/Los_Angeles"), "2 Dec 2026, 23:14:05 UTC-8");
  assert.equal(formatTime(at, "Europe/Berlin"), "3 Dec 2026, 08:14:05 UTC+1");
  assert.equal(formatTime(at, "Asia/Kolkata"), "3 Dec 2026, 12:44:05 UTC+5:30");
  assert.equal(formatTime(at, "Europe/Berlin", "clock"), "08:14:05");
  assert.equal(formatTime(at, "Europe/Berlin", "clock", { seconds: false }), "08:14");
  assert.equal(formatTime(at, "Europe/Berlin", "day"), "3 Dec 2026");
  const now = new Date("2026-06-01T00:00:00Z");
  assert.equal(formatTime(at, "Europe/Berlin", "minute", { now }), "Thu 3 Dec, 08:14 UTC+1");
  assert.equal(
    formatTime(at, "Europe/Berlin", "minute", { now: new Date("2025-06-01T00:00:00Z") }),
    "Thu 3 Dec 2026, 08:14 UTC+1",
  );
  assert.equal(formatTime(at, "UTC", "minute", { now, seconds: true }), "Thu 3 Dec, 07:14:05 UTC");
  // Summer time names the summer offset: one way ("UTC-7"), never "PDT" here and "GMT-7" there.
  assert.equal(zoneLabel("America/Los_Angeles", "2026-06-01T12:00:00Z"), "UTC-7");
  assert.equal(zoneLabel("Europe/London", "2026-12-01T12:00:00Z"), "UTC");
  // Midnight is 00, never 24.
  assert.equal(formatTime("2026-12-02T23:00:00Z", "Europe/Berlin", "clock"), "00:00:00");
  assert.equal(formatTime(null, "UTC"), "—");
  assert.equal(formatTime("not a time", "UTC"), "—");
});

test("a window picked in Los Angeles reads as its days there, not as 07:00 UTC", () => {
  // 1 June and 1 July, local midnights in Los Angeles (summer time, UTC-7).
  assert.equal(formatWindowEdge("2026-06-01T07:00:00.000Z", "America/Los_Angeles"), "1 Jun 2026");
  assert.equal(formatWindowEdge("2026-07-01T07:00:00.000Z", "America/Los_Angeles"), "1 Jul 2026");
  // The same instant read in UTC is not a midnight: its time shows.
  assert.equal(formatWindowEdge("2026-06-01T07:00:00.000Z", "UTC"), "1 Jun 2026, 07:00");
  assert.equal(formatWindowEdge("2026-06-01T07:00:30.000Z", "UTC"), "1 Jun 2026, 07:00:30");
});

test("a schedule's clock uses the same formatter", () => {
  const now = new Date("2026-12-01T00:00:00Z");
  assert.equal(formatInZone("2026-12-02T01:30:00Z", "Europe/Berlin", false, now), "Wed 2 Dec, 02:30 UTC+1");
  assert.equal(
    formatInZone("2026-12-02T01:30:00Z", "Europe/Berlin", false, now),
    formatTime("2026-12-02T01:30:00Z", "Europe/Berlin", "minute", { now }),
  );
});

test("ids are shown by their end: time-ordered ids made together share their start", () => {
  const a = "01a23abf-7c1e-7a00-8000-3f9a1c2e0001";
  const b = "01a23abf-7c1e-7a00-8000-3f9a1c2e0002";
  assert.equal(shortId(a), "…1c2e0001");
  assert.notEqual(shortId(a), shortId(b));
  assert.equal(shortId("short"), "short");
});

test("a failure reads in two layers: a plain sentence with what to do, and the cause for operators", () => {
  const lost = failureWords("crashed", true);
  assert.equal(lost.whose, "ours");
  assert.doesNotMatch(lost.summary, /lease|worker/);
  assert.match(lost.next, /Request it again/);
  assert.match(failureWords("crashed", false).next, /tried again on its own/);
  assert.equal(failureWords("permanent", true).whose, "request");
  assert.equal(failureWords("rate_limited", true).whose, "downstream");
  assert.equal(failureWords(null, true).whose, "ours", "an unknown class is ours, never the member's");
  const cause = "The attempt was lost: worker vm:31405:1fd691 stopped renewing its lease";
  assert.equal(failureCause({ class: "crashed", message: cause }), `crashed: ${cause}`);
});
