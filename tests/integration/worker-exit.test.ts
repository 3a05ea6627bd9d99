/**
 * A worker known to be gone gives its jobs back at once; a worker merely silent
 * does not. Side by side, two exports (30 s leases) whose attempts wait on a
 * lock this test holds: worker A is SIGKILLed and this test, as npm start's
 * supervisor does, records its exit (recordWorkerExit); worker B is SIGSTOPped
 * (stalled, not gone). A third worker (npm start's restart) runs what the
 * reaper hands back: A's export long before its lease would have run out, B's
 * only after its lease did — B could wake and go on writing until then.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import pg from "pg";
import { pool } from "@/lib/db";
import { enqueueJob } from "@/lib/jobs/enqueue";
import { recordWorkerExit } from "@/lib/jobs/workers";
import { useTestDatabase } from "../helpers/db";
import { waitFor } from "../helpers/net";
import { workerArgs } from "../helpers/worker";

const fx = useTestDatabase({ seed: 0.05 });

type Attempt = {
  attempt: number;
  outcome: string;
  started_at: Date;
  finished_at: Date | null;
  error_message: string | null;
};

test("a worker seen to exit has its 30 s-lease export run again at once; a stalled one waits out the lease", async () => {
  const children: ChildProcess[] = [];
  let output = "";
  const start = (queues: string, concurrency: number) => {
    const child = spawn(process.execPath, workerArgs("--queues", queues, "--concurrency", String(concurrency)), {
      env: {
        ...process.env,
        DATABASE_URL: fx.database.url,
        WORKER_HEARTBEAT_MS: "500",
        WORKER_DEAD_AFTER_MS: "2000",
        REAPER_INTERVAL_MS: "250",
        WORKER_SHUTDOWN_GRACE_MS: "1000",
      },
      stdio: ["ignore", "pipe", "pipe", "ipc"],
    });
    child.stdout?.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr?.on("data", (d: Buffer) => (output += d.toString()));
    children.push(child);
    return child;
  };
  const job = async (id: string) =>
    (
      await pool().query<{ status: string; lease_owner: string | null; lease_expires_at: Date | null }>(
        `SELECT status::text, lease_owner, lease_expires_at FROM jobs WHERE id = $1`,
        [id],
      )
    ).rows[0]!;
  const attempts = async (id: string) =>
    (
      await pool().query<Attempt>(
        `SELECT attempt, outcome::text, started_at, finished_at, error_message FROM job_attempts
         WHERE job_id = $1 ORDER BY attempt`,
        [id],
      )
    ).rows;
  const runningOn = (id: string, pid: number) =>
    waitFor(
      `export ${id} running on worker ${pid}`,
      async () => {
        const j = await job(id);
        return j.status === "running" && j.lease_owner?.includes(`:${pid}:`) ? j : null;
      },
      60_000,
      async () =>
        `\n${JSON.stringify((await pool().query(`SELECT id, status, lease_owner, admitted_at, queue FROM jobs WHERE type = 'export'`)).rows)}\n${output.slice(-5000)}`,
    );

  // The exports' attempts will wait on this lock (their row estimate reads `events`), 30 s leases renewed.
  const locker = new pg.Client({ connectionString: fx.database.url });
  await locker.connect();
  try {
    // One on each queue: each worker's pool fetches ahead what its queues hold, so each serves one queue.
    const request = { dataset: "events", format: "csv", compression: "none" };
    const onA = (await enqueueJob({ tenantId: fx.p.acmeId, type: "export", input: request })).job.id;
    const onB = (await enqueueJob({ tenantId: fx.p.acmeId, type: "export", queue: "bulk", input: request })).job.id;
    await locker.query("BEGIN");
    await locker.query("LOCK TABLE events IN ACCESS EXCLUSIVE MODE");
    const a = start("interactive", 1);
    const b = start("bulk", 1);
    await runningOn(onA, a.pid!);
    await runningOn(onB, b.pid!);

    // A: SIGKILLed, and its exit recorded as npm start's supervisor records it.
    a.kill("SIGKILL");
    await once(a, "exit");
    const leaseA = (await job(onA)).lease_expires_at!;
    assert.ok(leaseA, "A's export still held its lease when A died");
    assert.equal((await recordWorkerExit(a.pid!, "SIGKILL")).length, 1, "A's registry row is marked exited");
    // B: stalled. Its heartbeat stops; the fleet declares it dead, but its attempt may still be going.
    b.kill("SIGSTOP");
    start("interactive,bulk", 2);
    await locker.query("COMMIT");

    // B declared dead: from then on its lease is no longer renewed.
    await waitFor(
      "the stalled worker to be declared dead",
      async () =>
        (await pool().query(`SELECT 1 FROM workers WHERE pid = $1 AND state = 'dead'`, [b.pid])).rows.length > 0,
      60_000,
    );
    const leaseB = (await job(onB)).lease_expires_at!;

    const rerun = (id: string) =>
      waitFor(
        `a second attempt of ${id}`,
        async () => {
          const list = await attempts(id);
          return list.length >= 2 ? list : null;
        },
        120_000,
      );
    const [a1, a2] = await rerun(onA);
    const [b1, b2] = await rerun(onB);

    // Known gone: A's attempt is lost, and the next one began long before the lease would have run out.
    assert.equal(a1!.outcome, "lost");
    assert.match(a1!.error_message ?? "", /exited \(SIGKILL\)/);
    assert.ok(
      a2!.started_at < leaseA,
      `A's export ran again (${a2!.started_at.toISOString()}) before its lease ran out (${leaseA.toISOString()})`,
    );
    assert.ok(a2!.started_at >= a1!.finished_at!, "after its lost attempt was closed");
    // Silent: B's attempt is lost only once its lease ran out, and the next one began after that.
    assert.equal(b1!.outcome, "lost");
    assert.match(b1!.error_message ?? "", /stopped renewing its lease/);
    assert.ok(b1!.finished_at! >= leaseB, "B's attempt was not taken back before its lease ran out");
    assert.ok(b2!.started_at >= leaseB, "B's export did not run again before its lease ran out");

    // B wakes, learns it was declared dead and exits; its attempt was fenced off. Both exports end once.
    b.kill("SIGCONT");
    for (const id of [onA, onB]) {
      await waitFor(`${id} to succeed`, async () => (await job(id)).status === "succeeded", 120_000);
    }
    const succeeded = await pool().query<{ n: number }>(
      `SELECT count(*)::int AS n FROM job_attempts WHERE job_id = ANY($1::uuid[]) AND outcome = 'succeeded'`,
      [[onA, onB]],
    );
    assert.equal(succeeded.rows[0]!.n, 2);
  } finally {
    await locker.end().catch(() => {});
    for (const child of children) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGCONT");
        child.kill("SIGKILL");
      }
    }
  }
});
