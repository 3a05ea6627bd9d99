import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { cronProblem, isoInZone, nextOccurrences, occurrencesBetween, zoneProblem } from "@/lib/schedules/cron";
import { createScheduleSchema } from "@/lib/schedules/schema";
import { exportRunInput } from "@/lib/exports/schema";

const daily0230Berlin = { cron: "30 2 * * *", timezone: "Europe/Berlin" };
const onDay = (runs: Date[], day: string) => runs.filter((d) => isoInZone(d, "Europe/Berlin").startsWith(day));

describe("time zones that behave", () => {
  test("a daily 02:30 in Europe/Berlin runs exactly once on the day the clocks go forward (02:30 does not exist)", () => {
    const runs = occurrencesBetween(
      daily0230Berlin,
      new Date("2026-03-27T00:00:00Z"),
      new Date("2026-03-31T00:00:00Z"),
      100,
    );
    assert.equal(onDay(runs, "2026-03-29").length, 1);
    // The skipped wall time runs at the first valid time after it.
    assert.equal(isoInZone(onDay(runs, "2026-03-29")[0]!, "Europe/Berlin"), "2026-03-29T03:00:00+02:00");
    assert.equal(isoInZone(onDay(runs, "2026-03-28")[0]!, "Europe/Berlin"), "2026-03-28T02:30:00+01:00");
    assert.equal(isoInZone(onDay(runs, "2026-03-30")[0]!, "Europe/Berlin"), "2026-03-30T02:30:00+02:00");
    assert.equal(runs.length, 4, "one a day, never zero, never twice");
  });

  test("…and exactly once on the day they go back (02:30 happens twice)", () => {
    const runs = occurrencesBetween(
      daily0230Berlin,
      new Date("2026-10-23T00:00:00Z"),
      new Date("2026-10-27T00:00:00Z"),
      100,
    );
    assert.equal(onDay(runs, "2026-10-25").length, 1);
    assert.equal(runs.length, 4);
    assert.equal(isoInZone(onDay(runs, "2026-10-26")[0]!, "Europe/Berlin"), "2026-10-26T02:30:00+01:00");
  });

  test("a zone with a 30-minute offset (Asia/Kolkata) and one with 45 (Asia/Kathmandu)", () => {
    const [first] = nextOccurrences(
      { cron: "0 9 * * *", timezone: "Asia/Kolkata" },
      new Date("2026-01-01T00:00:00Z"),
      1,
    );
    assert.equal(first!.toISOString(), "2026-01-01T03:30:00.000Z");
    assert.equal(isoInZone(first!, "Asia/Kolkata"), "2026-01-01T09:00:00+05:30");
    const [k] = nextOccurrences({ cron: "0 9 * * *", timezone: "Asia/Kathmandu" }, new Date("2026-01-01T00:00:00Z"), 1);
    assert.equal(isoInZone(k!, "Asia/Kathmandu"), "2026-01-01T09:00:00+05:45");
  });

  test("seconds: a six-field cron", () => {
    const runs = nextOccurrences({ cron: "*/15 * * * * *", timezone: "UTC" }, new Date("2026-01-01T00:00:01Z"), 3);
    assert.deepEqual(
      runs.map((d) => d.toISOString()),
      ["2026-01-01T00:00:15.000Z", "2026-01-01T00:00:30.000Z", "2026-01-01T00:00:45.000Z"],
    );
  });

  test("startAt and endAt bound the occurrences", () => {
    const t = {
      cron: "0 * * * *",
      timezone: "UTC",
      startAt: new Date("2026-01-01T05:30:00Z"),
      endAt: new Date("2026-01-01T08:00:00Z"),
    };
    assert.deepEqual(
      occurrencesBetween(t, new Date("2026-01-01T00:00:00Z"), new Date("2026-01-02T00:00:00Z"), 100).map((d) =>
        d.toISOString(),
      ),
      ["2026-01-01T06:00:00.000Z", "2026-01-01T07:00:00.000Z"],
    );
  });
});

describe("validation says why", () => {
  test("cron and zone problems name what is wrong", () => {
    assert.match(cronProblem("* * *"), /5 fields/);
    assert.match(cronProblem("0 25 * * *"), /hour/);
    assert.equal(cronProblem("0 9 * * 1-5"), "");
    assert.match(zoneProblem("Europe/Atlantis"), /unknown IANA time zone/);
    assert.equal(zoneProblem("America/New_York"), "");
    const r = createScheduleSchema.safeParse({
      name: "x",
      cron: "0 0 * * *",
      task: "export",
      startAt: "2026-02-01",
      endAt: "2026-01-01",
    });
    assert.equal(r.success, false);
    assert.deepEqual(
      r.error!.issues.map((i) => i.path.join(".")),
      ["endAt"],
    );
  });
});

describe("incremental exports", () => {
  test("since lastRun becomes the window from the previous occurrence to this one", () => {
    const input = {
      dataset: "orders" as const,
      format: "csv" as const,
      compression: "none" as const,
      filter: { since: "lastRun" as const },
    };
    const at = new Date("2026-02-02T00:00:00Z");
    assert.deepEqual(
      exportRunInput(input, { scheduledFor: at, previousScheduledFor: new Date("2026-02-01T00:00:00Z") }).filter,
      {
        from: "2026-02-01T00:00:00.000Z",
        to: "2026-02-02T00:00:00.000Z",
      },
    );
    assert.deepEqual(exportRunInput(input, { scheduledFor: at, previousScheduledFor: null }).filter, {
      to: "2026-02-02T00:00:00.000Z",
    });
    const plain = { ...input, filter: { from: "2026-01-01T00:00:00.000Z" } };
    assert.equal(exportRunInput(plain, { scheduledFor: at, previousScheduledFor: null }), plain);
  });
});
