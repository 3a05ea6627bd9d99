/**
 * Workers dying never take the product down: the real `npm start`
 * (scripts/start.ts) runs jobs that SIGKILL their worker on every attempt.
 * Its supervisor restarts the worker each time (well past the five deaths a
 * minute that used to stop everything), the poison jobs end `crashed` in the
 * dead-letter queue after their budget, other jobs keep succeeding, the web
 * server keeps answering, the console's workers API tells of the restarts, and
 * SIGTERM still stops it all cleanly, even while a restart waits out its delay.
 *
 * start.ts builds the app first when the build is missing or older than the
 * sources (as the e2e suite's run of it does; the later one then reuses it).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { createApiTokenForEmail } from "@/lib/auth/tokens";
import { pool } from "@/lib/db";
import { enqueueJob } from "@/lib/jobs/enqueue";
import type { WorkerDto, WorkerPoolDto } from "@/lib/ops/workers";
import { useTestDatabase } from "../helpers/db";
import { freePort, isRunning, waitFor } from "../helpers/net";

const fx = useTestDatabase({ seed: 0.001 });

const POISON_JOBS = 2;
/**
 * The poison jobs' attempt budget: fewer than the probe task's 10, so the test needs fewer worker
 * deaths (each costs a worker start, slow on a loaded machine), yet more than the five deaths a
 * minute that used to stop everything.
 */
const BUDGET = 6;

test(
  "under npm start, jobs that SIGKILL their worker end crashed in the dead-letter queue while the product stays up",
  { timeout: 20 * 60_000 },
  async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const dataDir = await mkdtemp(path.join(tmpdir(), "conveyor-supervisor-test-"));
    // The environment of the e2e suite's `npm start` (tests/run.ts), without the test runner's own.
    const childEnv: NodeJS.ProcessEnv = { ...process.env };
    for (const key of ["NODE_ENV", "TEST_SERVER_URL", "TEST_TEMPLATE_DB", "TEST_ONLY", "NODE_TEST_CONTEXT"]) {
      delete childEnv[key];
    }
    Object.assign(childEnv, {
      DATABASE_URL: fx.database.url,
      PORT: String(port),
      AUTH_SECRET: "supervisor-test-secret-not-for-production",
      CONVEYOR_DATA_DIR: dataDir,
      RATE_LIMIT_READS_PER_MINUTE: "0",
      RATE_LIMIT_WRITES_PER_MINUTE: "0",
      NEXT_TELEMETRY_DISABLED: "1",
      // Small pools: the test server's connections are shared with other tests.
      WORKER_CONCURRENCY: "2",
      WEBHOOK_CONCURRENCY: "2",
      // Existing knobs, as the chaos test sets them: a dead worker is noticed in seconds.
      WORKER_HEARTBEAT_MS: "500",
      WORKER_DEAD_AFTER_MS: "3000",
      REAPER_INTERVAL_MS: "250",
      WORKER_SHUTDOWN_GRACE_MS: "2000",
      // The restart backoff, scaled down: 200 ms doubling to 3 s (a crashed attempt waits out its
      // 3 s lease anyway before it is retried).
      WORKER_RESTART_DELAY_MS: "200",
      WORKER_RESTART_MAX_DELAY_MS: "3000",
    });

    const start = spawn(process.execPath, ["--import", "tsx", "scripts/start.ts"], {
      env: childEnv,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    start.stdout.on("data", (d: Buffer) => (output += d.toString()));
    start.stderr.on("data", (d: Buffer) => (output += d.toString()));
    const tail = () => `\n--- npm start's output (last 6000 characters) ---\n${output.slice(-6000)}`;
    let health: { ok: number; failures: string[] } | null = null;
    let stopHealth = false;
    try {
      // Up: built if needed, migrated, the web server answering and npm start's three pools registered.
      await waitFor(
        "npm start to answer /api/health",
        async () => {
          if (start.exitCode !== null) throw new Error(`npm start exited (${start.exitCode})${tail()}`);
          return fetch(`${base}/api/health`).then(
            (r) => r.ok,
            () => false,
          );
        },
        15 * 60_000,
      );
      await waitFor(
        "three live workers",
        async () =>
          (await pool().query(`SELECT count(*)::int AS n FROM workers WHERE state = 'running'`)).rows[0].n >= 3,
        120_000,
      );

      // /api/health, polled all along: every answer must be a 200.
      health = { ok: 0, failures: [] };
      const healthLoop = (async () => {
        while (!stopHealth) {
          try {
            const r = await fetch(`${base}/api/health`);
            if (r.status === 200) health!.ok++;
            else health!.failures.push(`HTTP ${r.status}`);
          } catch (e) {
            health!.failures.push(e instanceof Error ? e.message : String(e));
          }
          await sleep(500);
        }
      })();

      const acme = fx.p.acmeId;
      const poison: string[] = [];
      for (let i = 0; i < POISON_JOBS; i++) {
        poison.push(
          (await enqueueJob({ tenantId: acme, type: "probe", input: { crashWorker: true }, maxAttempts: BUDGET })).job
            .id,
        );
      }
      // Ordinary jobs beside them: on the bulk queue (whose worker the poison jobs keep killing) and
      // on the interactive one, some now and more while the workers keep dying.
      const normal: string[] = [];
      const addNormal = async (round: number) => {
        for (const queue of ["bulk", "interactive"] as const) {
          const { job } = await enqueueJob({ tenantId: acme, type: "probe", queue, input: { sleepMs: 20 + round } });
          normal.push(job.id);
        }
      };
      for (let round = 0; round < 3; round++) await addNormal(round);

      const statuses = async (ids: string[]) =>
        (
          await pool().query<{ id: string; status: string; error_class: string | null; attempts: number }>(
            `SELECT id::text, status::text, error_class, attempts FROM jobs WHERE id = ANY($1::uuid[])`,
            [ids],
          )
        ).rows;
      let round = 3;
      await waitFor(
        "the poison jobs to end and the ordinary ones to succeed",
        async () => {
          if (start.exitCode !== null) throw new Error(`npm start exited (${start.exitCode})${tail()}`);
          const poisonDone = (await statuses(poison)).every((j) => j.status === "failed");
          if (!poisonDone && round < 15 && normal.length < round * 2 + 6) await addNormal(round++);
          if (!poisonDone) return false;
          return (await statuses(normal)).every((j) => j.status === "succeeded");
        },
        5 * 60_000,
        async () => {
          const rows = await pool().query<{
            id: string;
            status: string;
            error_class: string | null;
            attempts: number;
            queue: string;
            admitted: boolean;
          }>(
            `SELECT id::text, status::text, error_class, attempts, queue, admitted_at IS NOT NULL AS admitted
               FROM jobs WHERE id = ANY($1::uuid[])`,
            [[...poison, ...normal]],
          );
          const workers = await pool().query(
            `SELECT id, state, queues, restarts, previous_exit FROM workers ORDER BY started_at`,
          );
          return `\njobs: ${JSON.stringify(rows.rows)}\nworkers: ${JSON.stringify(workers.rows)}${tail()}`;
        },
      );
      // Ordinary jobs kept coming while the workers died.
      assert.ok(normal.length >= 8, `ordinary jobs were added during the crashes (${normal.length})`);

      // The poison jobs: failed, crashed, after exactly their budget of attempts, each lost with its worker.
      for (const j of await statuses(poison)) {
        assert.deepEqual(
          { status: j.status, errorClass: j.error_class, attempts: j.attempts },
          { status: "failed", errorClass: "crashed", attempts: BUDGET },
          `poison job ${j.id}`,
        );
      }
      const attempts = await pool().query<{ outcome: string; error_class: string | null; n: number }>(
        `SELECT outcome::text, error_class, count(*)::int AS n FROM job_attempts
         WHERE job_id = ANY($1::uuid[]) GROUP BY 1, 2`,
        [poison],
      );
      assert.deepEqual(attempts.rows, [{ outcome: "lost", error_class: "crashed", n: POISON_JOBS * BUDGET }]);
      for (const j of await statuses(normal)) assert.equal(j.status, "succeeded", `ordinary job ${j.id}`);

      // They are in the dead-letter queue, as an operator of the tenant sees it through the API.
      const oscar = await createApiTokenForEmail("oscar@acme.test", "supervisor-test", "acme");
      const dlq = await fetch(`${base}/api/v1/dead-letters?type=probe&errorClass=crashed&limit=100`, {
        headers: { Authorization: `Bearer ${oscar}` },
      });
      assert.equal(dlq.status, 200);
      const dead = (await dlq.json()) as { jobs: { id: string; status: string; errorClass: string }[] };
      assert.deepEqual(dead.jobs.map((j) => j.id).sort(), [...poison].sort());

      // Every poison attempt killed the bulk worker: at least BUDGET deaths, each followed by a restart.
      const restartLines = [...output.matchAll(/\[start\] the bulk worker died \(SIGKILL\); restart (\d+) in /g)];
      const restarts = Math.max(0, ...restartLines.map((m) => Number(m[1])));
      assert.ok(restarts >= BUDGET, `the supervisor restarted the bulk worker ${restarts} times${tail()}`);
      assert.doesNotMatch(output, /stopping everything/, tail());

      // The console's workers API says so: the bulk pool restarted, its previous worker killed, one live again.
      const root = await createApiTokenForEmail("root@conveyor.test", "supervisor-test-admin");
      const fleet = await waitFor(
        "the restarted bulk worker in the workers API",
        async () => {
          const r = await fetch(`${base}/api/v1/ops/workers`, { headers: { Authorization: `Bearer ${root}` } });
          assert.equal(r.status, 200);
          const body = (await r.json()) as { workers: WorkerDto[]; pools: WorkerPoolDto[] };
          const bulk = body.pools.find((p) => p.queues.join(",") === "bulk");
          return bulk && bulk.live >= 1 && bulk.restarts >= restarts && body.workers.some((w) => w.state === "dead")
            ? { ...body, bulk }
            : null;
        },
        60_000,
      );
      assert.equal(fleet.bulk.previousExit, "SIGKILL");
      assert.ok(fleet.bulk.exited >= 1);
      const newestBulk = fleet.workers.find(
        (w) => w.queues.join(",") === "bulk" && w.state === "running" && w.restarts === fleet.bulk.restarts,
      );
      assert.ok(newestBulk, "the newest bulk worker is listed with its restart count");
      assert.equal(newestBulk.previousExit, "SIGKILL");
      for (const queues of ["interactive", "webhooks"]) {
        const p = fleet.pools.find((x) => x.queues.join(",") === queues);
        assert.deepEqual({ live: p?.live, restarts: p?.restarts }, { live: 1, restarts: 0 }, `the ${queues} pool`);
      }

      // Still up.
      assert.equal(start.exitCode, null, "npm start is still running");
      assert.equal((await fetch(`${base}/api/health`)).status, 200);
      stopHealth = true;
      await healthLoop;
      assert.deepEqual(health.failures, [], "every /api/health answer was a 200");
      assert.ok(health.ok >= 10, `/api/health answered all along (${health.ok} times)`);

      // Stopping while a restart waits out its delay: kill the bulk worker, then SIGTERM npm start as
      // soon as the supervisor has announced a restart at least a second away (workers killed young
      // in a row bring the delay to its cap). No worker starts after that.
      const pids = (await pool().query<{ pid: number }>(`SELECT pid FROM workers`)).rows.map((r) => r.pid);
      const killed = new Set<number>();
      let before = 0;
      let announced: RegExpExecArray | null = null;
      for (let i = 0; i < 8 && !announced; i++) {
        const victim = await waitFor(
          "a live bulk worker",
          async () =>
            (
              await pool().query<{ pid: number }>(
                `SELECT pid FROM workers WHERE state = 'running' AND queues = '{bulk}' AND NOT (pid = ANY($1::int[]))
                 ORDER BY started_at DESC LIMIT 1`,
                [[...killed]],
              )
            ).rows[0]?.pid,
          120_000,
        );
        pids.push(victim);
        killed.add(victim);
        before = output.length;
        process.kill(victim, "SIGKILL");
        const line = await waitFor(
          "the supervisor to announce the restart",
          async () => /the bulk worker died \(SIGKILL\); restart \d+ in (\d+ ms|[\d.]+ s)/.exec(output.slice(before)),
          60_000,
        );
        if (!line[1]!.endsWith(" ms")) announced = line;
      }
      assert.ok(announced, `a restart delay reached a second${tail()}`);
      start.kill("SIGTERM");
      const [code] = (await once(start, "exit")) as [number | null];
      assert.equal(code, 0, `npm start stopped cleanly${tail()}`);
      const afterKill = output.slice(before + announced.index);
      assert.doesNotMatch(afterKill, /starting the bulk worker again/, `the pending restart was called off${tail()}`);
      assert.match(afterKill, /\[start\] stopping/);
      assert.match(afterKill, /\[start\] stopped/);
      assert.doesNotMatch(
        afterKill,
        /\[worker\] \S+ started/,
        `no worker started after the stop began (the restart was due in ${announced[1]})${tail()}`,
      );
      // Nothing left running: every worker process that ever registered is gone.
      for (const pid of pids) assert.equal(isRunning(pid), false, `worker process ${pid} is gone`);
    } finally {
      stopHealth = true;
      if (start.exitCode === null && start.signalCode === null) {
        start.kill("SIGTERM");
        await Promise.race([once(start, "exit"), sleep(60_000)]);
        if (start.exitCode === null && start.signalCode === null) start.kill("SIGKILL");
      }
      await rm(dataDir, { recursive: true, force: true });
    }
  },
);
