/**
 * A maintenance lock held by a process that stalls mid-pass (SIGSTOP, a frozen VM) is freed once its
 * transaction has been idle WORKER_DEAD_AFTER_MS: otherwise a stalled worker caught inside its reaper
 * pass would stop the reaper fleet-wide for as long as it stalls — the one time it is needed.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { resetEnvCache } from "@/lib/env";
import { withMaintenanceLock } from "@/lib/maintenance";
import { useTestDatabase } from "../helpers/db";

useTestDatabase({ seed: false });

test("a pass that stalls inside its transaction loses the lock after WORKER_DEAD_AFTER_MS; another process's pass runs", async () => {
  process.env.WORKER_DEAD_AFTER_MS = "500";
  resetEnvCache();
  try {
    let entered!: () => void;
    const inside = new Promise<void>((r) => (entered = r));
    // The stalled pass: it holds the lock, then sends nothing for far longer than the bound.
    const stalled = withMaintenanceLock("test_stall", async () => {
      entered();
      await sleep(5_000);
      return "finished";
    }).then(
      (r) => ({ ok: true as const, r }),
      (err: Error) => ({ ok: false as const, err }),
    );
    await inside;
    assert.deepEqual(await withMaintenanceLock("test_stall", async () => "second"), { ran: false }, "held at first");
    let second: Awaited<ReturnType<typeof withMaintenanceLock<string>>> = { ran: false };
    for (let i = 0; i < 100 && !second.ran; i++) {
      await sleep(100);
      second = await withMaintenanceLock("test_stall", async () => "second");
    }
    assert.deepEqual(
      second,
      { ran: true, value: "second" },
      "another pass took the lock while the first still stalled",
    );
    const first = await stalled;
    assert.equal(first.ok, false, "the stalled pass's transaction was ended by Postgres, its work not committed");
  } finally {
    delete process.env.WORKER_DEAD_AFTER_MS;
    resetEnvCache();
  }
});
