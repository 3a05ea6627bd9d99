/**
 * One worker process holds a thousand waiting attempts (issue 34): their
 * leases are renewed in batches — a statement a tick for all of them, so the
 * thousand rows share a handful of heartbeat times (a statement's now()), not
 * a thousand — through a few connections. Then the worker is stalled (SIGSTOP)
 * for at least 20 s, longer than WORKER_DEAD_AFTER_MS: the fleet declares it
 * dead and the reaper closes every attempt as lost once its lease ran out (the
 * worker stays stopped until it has, however slow the machine). On SIGCONT
 * the worker's first tick finds every lease past its time and stops every
 * attempt before its handler goes on: no probe writes its side effect (its
 * sleep ended during the stall), and the worker exits (3) as declared dead.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { pool } from "@/lib/db";
import { enqueueJob } from "@/lib/jobs/enqueue";
import { useTestDatabase } from "../helpers/db";
import { waitFor } from "../helpers/net";
import { workerArgs } from "../helpers/worker";

const fx = useTestDatabase({ seed: 0.05 });

const IN_FLIGHT = 1_000;
/** Each probe sleeps this long, then writes its effect: its sleep ends while the worker is stopped. */
const SLEEP_MS = 12_000;
const STALL_MS = 20_000;

/** A process's resident memory, MB (/proc/<pid>/status VmRSS). */
function rssMb(pid: number): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
  return Math.round(Number(kb) / 1024);
}

test("1,000 attempts in flight in one worker: leases renewed in batches, all fenced after a 20 s SIGSTOP", async (t) => {
  const children: ChildProcess[] = [];
  let output = "";
  const start = (queues: string, concurrency: number) => {
    const child = spawn(process.execPath, workerArgs("--queues", queues, "--concurrency", String(concurrency)), {
      env: { ...process.env, DATABASE_URL: fx.database.url, LOG_LEVEL: "warn" },
      stdio: ["ignore", "pipe", "pipe", "ipc"],
    });
    child.stdout?.on("data", (d: Buffer) => (output = (output + d.toString()).slice(-20_000)));
    child.stderr?.on("data", (d: Buffer) => (output = (output + d.toString()).slice(-20_000)));
    children.push(child);
    return child;
  };
  const count = async (sql: string, params: unknown[] = []) =>
    (await pool().query<{ n: number }>(sql, params)).rows[0]!.n;

  try {
    // The bulk queue's cap and window let a thousand of one tenant's probes run at once.
    await pool().query(
      `INSERT INTO queues (name, tenant_cap, max_admitted, configured_at) VALUES ('bulk', $1, $1, now())
       ON CONFLICT (name) DO UPDATE SET tenant_cap = $1, max_admitted = $1, configured_at = now()`,
      [IN_FLIGHT],
    );
    const ids: string[] = [];
    for (let i = 0; i < IN_FLIGHT; i += 100) {
      const made = await Promise.all(
        Array.from({ length: 100 }, () =>
          enqueueJob({ tenantId: fx.p.acmeId, type: "probe", input: { sleepMs: SLEEP_MS } }),
        ),
      );
      ids.push(...made.map((m) => m.job.id));
    }
    const worker = start("bulk", IN_FLIGHT);
    // A second worker on another queue: its reaper takes the stalled worker's attempts back.
    const other = start("interactive", 1);

    const running = () =>
      count(`SELECT count(*)::int AS n FROM jobs WHERE id = ANY($1::uuid[]) AND status = 'running'`, [ids]);
    await waitFor(
      `${IN_FLIGHT} probes running at once`,
      async () => (await running()) === IN_FLIGHT,
      90_000,
      async () => `running: ${await running()}\n${output.slice(-5000)}`,
    );
    const since = new Date();
    // Renewed while they wait (the probe's lease is 3 s, renewed every second): after 2.5 s every
    // lease was renewed at least once, and the renewals went a batch a tick — the rows share the
    // few now()s of the statements that renewed them.
    await new Promise((r) => setTimeout(r, 2_500));
    const beats = (
      await pool().query<{ renewed: number; times: number }>(
        `SELECT count(*) FILTER (WHERE heartbeat_at >= $2)::int AS renewed, count(DISTINCT heartbeat_at)::int AS times
           FROM jobs WHERE id = ANY($1::uuid[]) AND status = 'running'`,
        [ids, since],
      )
    ).rows[0]!;
    assert.equal(beats.renewed, IN_FLIGHT, "every lease was renewed while its attempt waited");
    assert.ok(
      beats.times <= 40,
      `${IN_FLIGHT} leases were last renewed at ${beats.times} distinct times: a statement per tick, not per attempt`,
    );
    // The worker's connections: a few pools' worth, not one per attempt.
    const connections = await count(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database()`,
    );
    assert.ok(connections <= 80, `${connections} connections to the database with ${IN_FLIGHT} attempts in flight`);
    t.diagnostic(
      `${IN_FLIGHT} in flight: leases renewed at ${beats.times} distinct times in 2.5 s; ${connections} connections ` +
        `to the database (both workers and this test); worker RSS ${rssMb(worker.pid!)} MB, an idle worker's ${rssMb(other.pid!)} MB`,
    );

    // Stalled past WORKER_DEAD_AFTER_MS (10 s) and past every lease (3 s).
    worker.kill("SIGSTOP");
    const stoppedAt = performance.now();
    await new Promise((r) => setTimeout(r, STALL_MS));
    // Still stopped until the reaper closed every attempt (a batch at a time, the next at once).
    const lost = () =>
      count(
        `SELECT count(*)::int AS n FROM job_attempts WHERE job_id = ANY($1::uuid[]) AND attempt = 1 AND outcome = 'lost'`,
        [ids],
      );
    await waitFor(
      "the reaper to close every attempt of the stalled worker as lost",
      async () => (await lost()) === IN_FLIGHT,
      120_000,
      async () =>
        `lost: ${await lost()}\nworkers: ${JSON.stringify((await pool().query(`SELECT pid, state, heartbeat_at FROM workers`)).rows)}` +
        `\nsessions: ${JSON.stringify((await pool().query(`SELECT pid, state, left(query, 80) AS query FROM pg_stat_activity WHERE datname = current_database()`)).rows)}` +
        `\n${output.slice(-3000)}`,
    );
    assert.equal(
      await count(`SELECT count(*)::int AS n FROM workers WHERE pid = $1 AND state = 'dead'`, [worker.pid]),
      1,
      "the stalled worker was declared dead",
    );

    t.diagnostic(`stopped ${((performance.now() - stoppedAt) / 1000).toFixed(1)} s before every attempt was reaped`);
    // It wakes: every attempt stops at its lease's end instead of writing its effect.
    const exited = once(worker, "exit");
    worker.kill("SIGCONT");
    const [code] = (await exited) as [number | null];
    assert.equal(code, 3, "the worker exits as declared dead");
    assert.equal(
      await count(`SELECT count(*)::int AS n FROM probe_effects WHERE job_id = ANY($1::uuid[])`, [ids]),
      0,
      "no attempt of the stalled worker went on to write its effect",
    );
    assert.equal(
      await count(
        `SELECT count(*)::int AS n FROM job_attempts WHERE job_id = ANY($1::uuid[]) AND attempt = 1 AND outcome <> 'lost'`,
        [ids],
      ),
      0,
      "the reaper's verdict on each attempt stands",
    );
  } finally {
    for (const child of children) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGCONT");
        child.kill("SIGKILL");
      }
    }
  }
});
