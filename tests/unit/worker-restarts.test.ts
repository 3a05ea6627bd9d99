import { test } from "node:test";
import assert from "node:assert/strict";
import { describeRestart, summarizePools, type WorkerDto } from "@/lib/ops/workers";
import {
  describeExit,
  formatDelay,
  initialRestartState,
  nextRestart,
  type RestartState,
} from "../../scripts/restart-backoff";

const policy = { initialMs: 1_000, maxMs: 30_000, stableAfterMs: 60_000 };

test("a pool whose workers keep dying young waits 1 s, doubling to 30 s, and is restarted however often", () => {
  let state: RestartState = initialRestartState;
  const delays: number[] = [];
  for (let i = 0; i < 100; i++) {
    const next = nextRestart(state, 500, policy);
    delays.push(next.delayMs);
    state = next.state;
  }
  assert.deepEqual(delays.slice(0, 7), [1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000]);
  assert.equal(delays.at(-1), 30_000, "still restarted after 100 deaths, at the cap");
  assert.equal(state.restarts, 100);
});

test("a worker that stayed up a minute starts the delay over; the restart count goes on", () => {
  let state: RestartState = initialRestartState;
  for (let i = 0; i < 4; i++) state = nextRestart(state, 100, policy).state;
  assert.equal(nextRestart(state, 59_999, policy).delayMs, 16_000);
  const after = nextRestart(state, 60_000, policy);
  assert.equal(after.delayMs, 1_000);
  assert.equal(after.state.restarts, 5);
  assert.equal(nextRestart(after.state, 100, policy).delayMs, 2_000);
});

test("how a worker ended and how long until its restart, as the log says them", () => {
  assert.equal(describeExit(null, "SIGKILL"), "SIGKILL");
  assert.equal(describeExit(3, null), "declared dead");
  assert.equal(describeExit(1, null), "code 1");
  assert.equal(describeExit(0, null), "code 0");
  assert.equal(formatDelay(200), "200 ms");
  assert.equal(formatDelay(4_000), "4 s");
  assert.equal(formatDelay(1_500), "1.5 s");
});

const worker = (w: Partial<WorkerDto>): WorkerDto => ({
  id: "w",
  host: "h",
  pid: 1,
  version: "0.1.0",
  queues: ["bulk"],
  concurrency: 4,
  runningJobs: 0,
  startedAt: "2026-12-03T10:00:00.000Z",
  heartbeatAt: "2026-12-03T10:00:00.000Z",
  stoppedAt: null,
  state: "running",
  restarts: 0,
  previousExit: null,
  ...w,
});

test("a restarted worker says which restart it is and how the one before it ended", () => {
  assert.equal(describeRestart({ restarts: 0, previousExit: null }), null);
  assert.equal(describeRestart({ restarts: 3, previousExit: "SIGKILL" }), "restart 3 · previous exited with SIGKILL");
  assert.equal(
    describeRestart({ restarts: 1, previousExit: "declared dead" }),
    "restart 1 · previous was declared dead",
  );
  assert.equal(describeRestart({ restarts: 2, previousExit: null }), "restart 2");
});

test("the pool summary: live slots and jobs, exited workers, and its newest worker's restarts", () => {
  const pools = summarizePools([
    worker({ id: "b3", restarts: 2, previousExit: "SIGKILL", startedAt: "2026-12-03T10:02:00.000Z", runningJobs: 1 }),
    worker({ id: "i1", queues: ["interactive"], startedAt: "2026-12-03T10:00:00.000Z" }),
    worker({ id: "b2", state: "unresponsive", restarts: 1, startedAt: "2026-12-03T10:01:00.000Z" }),
    worker({ id: "b1", state: "dead", stoppedAt: "2026-12-03T10:00:30.000Z" }),
    worker({
      id: "b0",
      state: "stopped",
      stoppedAt: "2026-12-03T09:00:00.000Z",
      startedAt: "2026-12-03T08:00:00.000Z",
    }),
  ]);
  assert.deepEqual(pools, [
    {
      host: "h",
      queues: ["bulk"],
      live: 1,
      unresponsive: 1,
      exited: 2,
      concurrency: 4,
      runningJobs: 1,
      restarts: 2,
      previousExit: "SIGKILL",
      startedAt: "2026-12-03T10:02:00.000Z",
      lastExitAt: "2026-12-03T10:00:30.000Z",
    },
    {
      host: "h",
      queues: ["interactive"],
      live: 1,
      unresponsive: 0,
      exited: 0,
      concurrency: 4,
      runningJobs: 0,
      restarts: 0,
      previousExit: null,
      startedAt: "2026-12-03T10:00:00.000Z",
      lastExitAt: null,
    },
  ]);
});
