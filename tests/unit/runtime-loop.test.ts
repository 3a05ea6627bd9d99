/**
 * lib/runtime/service.ts's loop: wake, coalesce, sleep-until, sweep, stop. No
 * database and no notifier (no `wakeOn`): ticks are held on promises the test
 * releases, so what is asserted is what ran, never how long it took.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { setImmediate as turn } from "node:timers/promises";
import { loop, type ServiceContext, type Tick } from "@/lib/runtime/service";

const HOUR = 3_600_000;

function context(lines: { line: string; level: string }[] = []): ServiceContext {
  return { workerId: "test", log: (line, level = "info") => lines.push({ line, level }) };
}

/** A promise and its resolve. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 5_000 && !check(); i++) await turn();
  assert.ok(check(), "the condition never held");
}

describe("loop", () => {
  test("wake runs a tick now; wakes during a tick cause one more tick, not one each, with their payloads", async () => {
    const ticks: Tick[] = [];
    let hold = gate();
    const service = loop({
      name: "t",
      everyMs: () => HOUR,
      async run(_ctx, tick) {
        ticks.push(tick);
        await hold.promise;
        return [];
      },
    });
    await service.start(context());
    await turn();
    assert.equal(ticks.length, 0, "no tick before the first interval without runAtStart");
    service.wake("a");
    await until(() => ticks.length === 1);
    for (const p of ["b", "c", "d"]) service.wake(p);
    service.wake();
    const first = hold;
    hold = gate();
    hold.open();
    first.open();
    await until(() => ticks.length === 2);
    for (let i = 0; i < 50; i++) await turn();
    assert.equal(ticks.length, 2, "four wakes during a tick: one more tick");
    assert.deepEqual(
      ticks.map((t) => [t.reason, t.payloads]),
      [
        ["wake", ["a"]],
        ["wake", ["b", "c", "d"]],
      ],
    );
    await service.stop();
  });

  test("a tick's nextInMs is when the next one runs (sleep-until); without it, everyMs", async () => {
    let n = 0;
    const service = loop({
      name: "t",
      everyMs: () => HOUR,
      runAtStart: true,
      async run() {
        n++;
        return n < 5 ? { lines: [`tick ${n}`], nextInMs: 0 } : [];
      },
    });
    const lines: { line: string; level: string }[] = [];
    await service.start(context(lines));
    await until(() => n === 5);
    for (let i = 0; i < 50; i++) await turn();
    assert.equal(n, 5, "the fifth tick asked for nothing: the next is an hour away");
    assert.deepEqual(
      lines.map((l) => l.line),
      ["tick 1", "tick 2", "tick 3", "tick 4"],
    );
    await service.stop();
  });

  test("a sweep tick is marked as one", async () => {
    const ticks: Tick[] = [];
    const service = loop({
      name: "t",
      everyMs: () => HOUR,
      sweepEveryMs: () => 1,
      async run(_ctx, tick) {
        ticks.push(tick);
        return [];
      },
    });
    await service.start(context());
    await until(() => ticks.length > 0);
    await service.stop();
    assert.equal(ticks[0]!.reason, "sweep");
    assert.equal(ticks[0]!.sweep, true);
  });

  test("stop waits for the tick in progress, and no tick runs after it", async () => {
    let ticks = 0;
    const hold = gate();
    const service = loop({
      name: "t",
      everyMs: () => HOUR,
      runAtStart: true,
      async run() {
        ticks++;
        await hold.promise;
        return [];
      },
    });
    await service.start(context());
    await until(() => ticks === 1);
    service.wake();
    let stopped = false;
    const stopping = service.stop().then(() => (stopped = true));
    for (let i = 0; i < 50; i++) await turn();
    assert.equal(stopped, false, "stop waits for the tick");
    hold.open();
    await stopping;
    service.wake();
    for (let i = 0; i < 50; i++) await turn();
    assert.equal(ticks, 1, "the wake before stop and the one after it ran nothing");
  });

  test("a failing tick is logged once while it fails the same way, and its recovery once", async () => {
    let n = 0;
    const service = loop({
      name: "t",
      everyMs: () => HOUR,
      runAtStart: true,
      async run() {
        n++;
        if (n <= 3) throw new Error("database unreachable");
        return { nextInMs: HOUR };
      },
    });
    const lines: { line: string; level: string }[] = [];
    await service.start(context(lines));
    await until(() => n === 1);
    service.wake();
    await until(() => n === 2);
    service.wake();
    await until(() => n === 3);
    service.wake();
    await until(() => n === 4);
    await service.stop();
    assert.deepEqual(lines, [
      { line: "failed: database unreachable", level: "error" },
      { line: "recovered after 3 failed tick(s)", level: "info" },
    ]);
  });
});
