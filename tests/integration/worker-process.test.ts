import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
import { db } from "@/lib/db";
import { requestExport } from "@/lib/exports/service";
import { enqueueJob } from "@/lib/jobs/enqueue";
import { useTestDatabase } from "../helpers/db";
import { workerArgs } from "../helpers/worker";

const fx = useTestDatabase({ seed: 0.2 });

async function waitFor<T>(fn: () => Promise<T | null | undefined | false>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const v = await fn();
    if (v) return v;
    await sleep(20);
  }
  throw new Error("timed out");
}

test("npm run worker runs queued exports and SIGTERM lets the running one finish before a clean exit", async () => {
  const worker = spawn(process.execPath, workerArgs("--concurrency", "2"), {
    env: { ...process.env, DATABASE_URL: fx.database.url, WORKER_SHUTDOWN_GRACE_MS: "20000" },
    stdio: ["ignore", "pipe", "pipe", "ipc"],
  });
  let output = "";
  worker.stdout!.on("data", (d: Buffer) => (output += d.toString()));
  worker.stderr!.on("data", (d: Buffer) => (output += d.toString()));
  try {
    const { job } = await requestExport(fx.p.ada, { dataset: "events", format: "jsonl", compression: "gzip" });
    await waitFor(async () => (await db().job.findUnique({ where: { id: job.id } }))?.status === "running");
    worker.kill("SIGTERM");
    const [code] = (await once(worker, "exit")) as [number | null];
    assert.equal(code, 0, output);
    const done = await db().job.findUniqueOrThrow({ where: { id: job.id } });
    assert.equal(done.status, "succeeded", "the running export finished within the grace period");
    assert.equal(Number(done.progressDone), 200_000);
    assert.match(output, /SIGTERM: finishing running jobs/);
    assert.match(output, /\[worker\] stopped/);
  } finally {
    if (worker.exitCode === null) worker.kill("SIGKILL");
  }
});

test("a worker given a bad --concurrency refuses to start", async () => {
  const worker = spawn(process.execPath, workerArgs("--concurrency", "zero"), {
    env: { ...process.env, DATABASE_URL: fx.database.url },
    stdio: ["ignore", "pipe", "pipe", "ipc"],
  });
  let output = "";
  worker.stderr!.on("data", (d: Buffer) => (output += d.toString()));
  const [code] = (await once(worker, "exit")) as [number | null];
  assert.equal(code, 1);
  assert.match(output, /--concurrency must be an integer from 1 to 4096/);
});

test("past its grace period a shutdown hands the running job back at once, without spending its budget", async () => {
  const worker = spawn(process.execPath, workerArgs("--concurrency", "1"), {
    env: { ...process.env, DATABASE_URL: fx.database.url, WORKER_SHUTDOWN_GRACE_MS: "300" },
    stdio: ["ignore", "pipe", "pipe", "ipc"],
  });
  let output = "";
  worker.stdout!.on("data", (d: Buffer) => (output += d.toString()));
  worker.stderr!.on("data", (d: Buffer) => (output += d.toString()));
  try {
    const { job } = await enqueueJob({ tenantId: fx.p.acmeId, type: "probe", input: { sleepMs: 30_000 } });
    await waitFor(async () => (await db().job.findUnique({ where: { id: job.id } }))?.status === "running");
    const t0 = Date.now();
    worker.kill("SIGTERM");
    const [code] = (await once(worker, "exit")) as [number | null];
    assert.equal(code, 0, output);
    assert.ok(Date.now() - t0 < 10_000, "the worker did not wait for the 30 s job");
    const after = await db().job.findUniqueOrThrow({ where: { id: job.id }, include: { attemptsHistory: true } });
    assert.equal(after.status, "retrying");
    assert.equal(after.errorClass, "shutdown");
    assert.ok(after.runAt.getTime() <= Date.now(), "runnable again at once");
    assert.equal(after.maxAttempts, 11, "the interrupted attempt does not count against the budget of 10");
    assert.deepEqual(
      after.attemptsHistory.map((a) => a.outcome),
      ["interrupted"],
    );
    const registry = await db().worker.findFirstOrThrow({ where: { pid: worker.pid } });
    assert.equal(registry.state, "stopped");
  } finally {
    if (worker.exitCode === null) worker.kill("SIGKILL");
  }
});

test("a worker holds one LISTEN connection of ours (admission, the scheduler, its jobs' events) besides graphile's", async () => {
  const worker = spawn(process.execPath, workerArgs("--concurrency", "1"), {
    env: {
      ...process.env,
      DATABASE_URL: fx.database.url,
      PGAPPNAME: "conveyor-test-listen-count",
      WORKER_SHUTDOWN_GRACE_MS: "300",
    },
    stdio: ["ignore", "pipe", "pipe", "ipc"],
  });
  let output = "";
  worker.stdout!.on("data", (d: Buffer) => (output += d.toString()));
  worker.stderr!.on("data", (d: Buffer) => (output += d.toString()));
  try {
    // A running job: its attempt follows its events (the cancel signal) through the event hub.
    // (The test above left one handed back, runnable at once: whichever of them runs.)
    await enqueueJob({ tenantId: fx.p.acmeId, type: "probe", input: { sleepMs: 30_000 } });
    await waitFor(async () => (await db().job.count({ where: { status: "running" } })) > 0);
    const rows = await db().$queryRaw<{ application_name: string; n: number }[]>`
      SELECT application_name, count(*)::int AS n FROM pg_stat_activity
       WHERE datname = current_database() AND query LIKE 'LISTEN%' AND pid <> pg_backend_pid()
       GROUP BY application_name ORDER BY application_name`;
    assert.deepEqual(
      rows,
      [
        { application_name: `conveyor-listen:${worker.pid}`, n: 1 },
        { application_name: "conveyor-test-listen-count", n: 1 },
      ],
      output,
    );
    worker.kill("SIGTERM");
    const [code] = (await once(worker, "exit")) as [number | null];
    assert.equal(code, 0, output);
  } finally {
    if (worker.exitCode === null) worker.kill("SIGKILL");
  }
});
