/**
 * lib/runtime/notifier.ts, the process's one LISTEN connection of ours: its
 * connection killed under it (pg_terminate_backend), it reconnects, LISTENs
 * again, and tells its subscribers (lost, then reconnected), with one warning and
 * one info line; a subscription made while the database cannot be reached
 * (`whenDown: "retry"`) comes up by itself once it can.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { pool } from "@/lib/db";
import { resetEnvCache } from "@/lib/env";
import { Notifier } from "@/lib/runtime/notifier";
import { loop, type Tick } from "@/lib/runtime/service";
import { useTestDatabase } from "../helpers/db";

const fx = useTestDatabase({ seed: false });

/** Polls `check` until it holds; fails the test if it never does. */
async function until(what: string, check: () => boolean | Promise<boolean>, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return;
    await sleep(20);
  }
  assert.fail(`never: ${what}`);
}

const notify = (channel: string, payload: string) => pool().query("SELECT pg_notify($1, $2)", [channel, payload]);

describe("notifier", () => {
  test("after pg_terminate_backend of its connection, subscriptions come back and the reconnected callback fires", async () => {
    const lines: { line: string; level: string }[] = [];
    const n = new Notifier({
      applicationName: "conveyor-test-notifier",
      log: (line, level) => lines.push({ line, level }),
    });
    const got: string[] = [];
    const events: string[] = [];
    try {
      await n.subscribe("conveyor_test_a", (p) => got.push(`a:${p}`), {
        onLost: () => events.push("a lost"),
        onReconnected: () => events.push("a reconnected"),
      });
      await n.subscribe("conveyor_test_b", (p) => got.push(`b:${p}`), {
        onReconnected: () => events.push("b reconnected"),
      });
      await notify("conveyor_test_a", "1");
      await notify("conveyor_test_b", "1");
      await until("both delivered", () => got.length === 2);

      const pid = n.backendPid;
      assert.ok(pid);
      // One LISTEN connection for both channels.
      const { rows } = await pool().query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND application_name = 'conveyor-test-notifier'`,
      );
      assert.equal(rows[0]!.n, 1);
      await pool().query("SELECT pg_terminate_backend($1)", [pid]);
      await until("reconnected", () => events.includes("a reconnected") && events.includes("b reconnected"));
      assert.deepEqual(events, ["a lost", "a reconnected", "b reconnected"]);
      assert.notEqual(n.backendPid, pid);

      await notify("conveyor_test_a", "2");
      await notify("conveyor_test_b", "2");
      await until("delivered after the reconnect", () => got.length === 4);
      assert.deepEqual(got, ["a:1", "b:1", "a:2", "b:2"]);
      assert.deepEqual(
        lines.map((l) => l.level),
        ["warn", "info"],
        "one warning on the loss, one line on the recovery",
      );
      assert.match(
        lines[0]!.line,
        /LISTEN connection lost.*reconnecting \(channels: conveyor_test_a, conveyor_test_b\)/,
      );
      assert.match(lines[1]!.line, /LISTEN connection back after \d+ ms/);
    } finally {
      await n.close();
    }
  });

  test("unsubscribing the last subscriber of a channel UNLISTENs it; the others still get theirs", async () => {
    const n = new Notifier({ applicationName: "conveyor-test-notifier-2", log: () => {} });
    const got: string[] = [];
    try {
      const offA = await n.subscribe("conveyor_test_a", (p) => got.push(`a:${p}`));
      await n.subscribe("conveyor_test_b", (p) => got.push(`b:${p}`));
      offA();
      offA(); // twice: a no-op
      await notify("conveyor_test_a", "1");
      await notify("conveyor_test_b", "1");
      await until("b delivered", () => got.includes("b:1"));
      await sleep(100); // a's would have come in the same order as b's
      assert.deepEqual(got, ["b:1"]);
    } finally {
      await n.close();
    }
  });

  test("whenDown retry: a subscription made while the database cannot be reached comes up by itself, with one warning", async () => {
    const lines: { line: string; level: string }[] = [];
    const n = new Notifier({
      applicationName: "conveyor-test-notifier-3",
      log: (line, level) => lines.push({ line, level }),
    });
    // Nothing listens on port 1.
    process.env.DATABASE_DIRECT_URL = Object.assign(new URL(fx.database.url), { port: "1" }).toString();
    resetEnvCache();
    const got: string[] = [];
    let reconnected = 0;
    try {
      await assert.rejects(
        n.subscribe("conveyor_test_c", () => {}),
        /ECONNREFUSED/,
        "by default it rejects",
      );
      await n.subscribe("conveyor_test_a", (p) => got.push(p), {
        whenDown: "retry",
        onReconnected: () => reconnected++,
      });
      assert.equal(n.connected, false);
      await sleep(1_000); // a few failed attempts (250 ms, 500 ms…)
      delete process.env.DATABASE_DIRECT_URL;
      resetEnvCache();
      await until("up", () => reconnected === 1);
      await notify("conveyor_test_a", "1");
      await until("delivered", () => got.length === 1);
      assert.deepEqual(
        lines.map((l) => l.level),
        ["warn", "info"],
        "failed attempts between the warning and the recovery are quiet",
      );
    } finally {
      delete process.env.DATABASE_DIRECT_URL;
      resetEnvCache();
      await n.close();
    }
  });

  test("a loop's wakeOn channel wakes a tick through the process's notifier, with the payload", async () => {
    const ticks: Tick[] = [];
    const service = loop({
      name: "woken",
      everyMs: () => 3_600_000,
      wakeOn: ["conveyor_test_wake"],
      async run(_ctx, tick) {
        ticks.push(tick);
        return [];
      },
    });
    await service.start({ workerId: "test", log: () => {} });
    try {
      await notify("conveyor_test_wake", "queue-a");
      await until("woken", () => ticks.length > 0);
      assert.equal(ticks[0]!.reason, "wake");
      assert.deepEqual(ticks[0]!.payloads, ["queue-a"]);
    } finally {
      await service.stop();
    }
  });
});
