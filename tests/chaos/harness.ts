/**
 * The chaos harness behind `npm run chaos` and its short version in `npm test`:
 * several real worker processes run `probe` jobs while workers are killed with
 * SIGKILL and restarted, and worker database connections are terminated. Then
 * SQL checks what must hold: nothing lost, one side effect per job, nothing
 * completed twice, no status moved backwards, attempts within budget.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream, type WriteStream } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { pool } from "@/lib/db";
import { enqueueJob } from "@/lib/jobs/enqueue";
import { recordWorkerExit } from "@/lib/jobs/workers";
import "@/lib/workloads";
import { describeExit } from "../../scripts/restart-backoff";
import { workerArgs } from "../helpers/worker";

export type ChaosOptions = {
  databaseUrl: string;
  /** The workers' DATABASE_URL through a pooler (npm run chaos -- --pgbouncer); databaseUrl is then their DATABASE_DIRECT_URL. */
  pooledUrl?: string;
  tenantId: string;
  jobs: number;
  workers: number;
  concurrency: number;
  /** A random worker is SIGKILLed this often (ms); it is restarted shortly after. */
  killEveryMs: number;
  /** A random worker database connection is terminated this often (ms). */
  terminateEveryMs: number;
  maxSleepMs: number;
  /** Jobs that SIGKILL whichever worker runs them, every time (budget 3): they must end dead-lettered. */
  poisonJobs: number;
  timeoutMs: number;
  log: (line: string) => void;
};

export type ChaosReport = {
  jobs: number;
  poison: { jobs: number; deadLettered: number; attempts: number[] };
  byStatus: Record<string, number>;
  lost: number;
  effectRows: number;
  jobsWithoutEffect: number;
  reExecutions: number;
  completedTwice: number;
  backwardTransitions: number;
  overBudget: number;
  overlappingAttempts: number;
  kills: { pid: number; inFlight: number; runnableMs: number | null; recoveryMs: number | null }[];
  terminations: number;
  seconds: number;
  ok: boolean;
};

const WORKER_ENV = {
  WORKER_HEARTBEAT_MS: "500",
  WORKER_DEAD_AFTER_MS: "2000",
  REAPER_INTERVAL_MS: "250",
  WORKER_SHUTDOWN_GRACE_MS: "2000",
  PGAPPNAME: "conveyor-chaos-worker",
};

type Running = { child: ChildProcess; pid: number };

let workerLog: WriteStream | null = null;

function startWorker(opts: ChaosOptions): Running {
  const child = spawn(process.execPath, workerArgs("--concurrency", String(opts.concurrency)), {
    env: {
      ...process.env,
      ...WORKER_ENV,
      DATABASE_URL: opts.pooledUrl ?? opts.databaseUrl,
      ...(opts.pooledUrl ? { DATABASE_DIRECT_URL: opts.databaseUrl } : {}),
    },
    stdio: ["ignore", "pipe", "pipe", "ipc"],
  });
  let err = "";
  const stamp = (d: Buffer) => d.toString().replace(/^(?=.)/gm, `${new Date().toISOString()} [${child.pid}] `);
  child.stdout?.on("data", (d: Buffer) => workerLog?.write(stamp(d)));
  child.stderr?.on("data", (d: Buffer) => {
    workerLog?.write(stamp(d));
    err = (err + d.toString()).slice(-4000);
  });
  child.on("exit", (code, signal) => {
    if (signal !== "SIGKILL" && code !== 0 && code !== null)
      opts.log(`[chaos] worker ${child.pid} exited ${code}: ${err.trim().split("\n").slice(-3).join(" | ")}`);
    // As npm start's supervisor does: a worker seen to exit is known to be gone, and its running
    // attempts are taken back at once (the no-overlap check below holds that to account).
    if (code !== 0 && child.pid !== undefined) {
      recordWorkerExit(child.pid, describeExit(code, signal)).catch((e: Error) =>
        opts.log(`[chaos] could not record worker ${child.pid}'s exit: ${e.message}`),
      );
    }
  });
  return { child, pid: child.pid! };
}

const q = async <T>(text: string, values: unknown[] = []): Promise<T[]> =>
  (await pool().query(text, values)).rows as T[];

export async function runChaos(opts: ChaosOptions): Promise<ChaosReport> {
  const started = Date.now();
  const logPath = path.join(tmpdir(), `conveyor-chaos-${process.pid}.log`);
  workerLog = createWriteStream(logPath);
  opts.log(`[chaos] worker output: ${logPath}`);
  const workers: Running[] = Array.from({ length: opts.workers }, () => startWorker(opts));
  opts.log(`[chaos] ${opts.workers} workers × concurrency ${opts.concurrency}; enqueuing ${opts.jobs} probe jobs`);
  for (let i = 0; i < opts.jobs; i += 100) {
    await Promise.all(
      Array.from({ length: Math.min(100, opts.jobs - i) }, () =>
        enqueueJob({
          tenantId: opts.tenantId,
          type: "probe",
          input: { sleepMs: Math.floor(Math.random() * opts.maxSleepMs) },
        }),
      ),
    );
  }

  const POISON_BUDGET = 3;
  const poisonIds: string[] = [];
  for (let i = 0; i < opts.poisonJobs; i++) {
    const { job } = await enqueueJob({
      tenantId: opts.tenantId,
      type: "probe",
      input: { crashWorker: true },
      maxAttempts: POISON_BUDGET,
    });
    poisonIds.push(job.id);
  }
  const kills: { pid: number; at: number }[] = [];
  let terminations = 0;
  let nextKill = Date.now() + opts.killEveryMs;
  let nextTerminate = Date.now() + opts.terminateEveryMs / 2;
  const deadline = started + opts.timeoutMs;
  let remaining: number;
  while (Date.now() < deadline) {
    const [row] = await q<{ n: number }>(
      `SELECT count(*)::int AS n FROM jobs WHERE type = 'probe' AND status NOT IN ('succeeded', 'failed', 'cancelled')`,
    );
    remaining = row?.n ?? 0;
    if (remaining === 0) break;
    // Chaos only while there is plenty left, so the run also shows a clean finish.
    if (Date.now() >= nextKill && remaining > opts.jobs / 10) {
      const victim = workers[Math.floor(Math.random() * workers.length)]!;
      victim.child.kill("SIGKILL");
      kills.push({ pid: victim.pid, at: Date.now() });
      opts.log(`[chaos] SIGKILL worker ${victim.pid} (${remaining} jobs left)`);
      const idx = workers.indexOf(victim);
      await sleep(200);
      workers[idx] = startWorker(opts);
      nextKill = Date.now() + opts.killEveryMs;
    }
    // Workers killed by a poison job (or crashed) are restarted like the ones we kill.
    for (let i = 0; i < workers.length; i++) {
      const w = workers[i]!;
      if (w.child.exitCode !== null || w.child.signalCode !== null) {
        if (!kills.some((k) => k.pid === w.pid)) kills.push({ pid: w.pid, at: Date.now() });
        workers[i] = startWorker(opts);
      }
    }
    if (Date.now() >= nextTerminate && remaining > opts.jobs / 10) {
      const rows = await q<{ pid: number }>(
        `SELECT pg_terminate_backend(pid) AS t, pid FROM pg_stat_activity
         WHERE datname = current_database()
           AND (application_name = 'conveyor-chaos-worker' OR application_name LIKE 'conveyor-listen:%')
           AND pid <> pg_backend_pid() ORDER BY random() LIMIT 1`,
      );
      if (rows.length) terminations++;
      nextTerminate = Date.now() + opts.terminateEveryMs;
    }
    await sleep(100);
  }
  await Promise.all(
    workers.map(
      (w) =>
        new Promise<void>((resolve) => {
          if (w.child.exitCode !== null || w.child.signalCode !== null) return resolve();
          w.child.once("exit", () => resolve());
          w.child.kill("SIGTERM");
          setTimeout(() => w.child.kill("SIGKILL"), 10_000).unref();
        }),
    ),
  );
  const seconds = (Date.now() - started) / 1000;

  const poisonRows = await q<{ status: string; attempts: number }>(
    `SELECT status, attempts FROM jobs WHERE id = ANY($1::uuid[])`,
    [poisonIds],
  );
  const statusRows = await q<{ status: string; n: number }>(
    `SELECT status, count(*)::int AS n FROM jobs WHERE type = 'probe' AND NOT (id = ANY($1::uuid[])) GROUP BY status`,
    [poisonIds],
  );
  const byStatus = Object.fromEntries(statusRows.map((r) => [r.status, r.n]));
  const [checks] = await q<Record<string, number>>(
    `
    SELECT
      (SELECT count(*)::int FROM probe_effects) AS "effectRows",
      (SELECT count(*)::int FROM jobs j WHERE j.type = 'probe' AND NOT (j.id = ANY($1::uuid[]))
         AND NOT EXISTS (SELECT 1 FROM probe_effects e WHERE e.job_id = j.id)) AS "jobsWithoutEffect",
      (SELECT coalesce(sum(executions - 1), 0)::int FROM probe_effects) AS "reExecutions",
      (SELECT count(*)::int FROM (SELECT job_id FROM job_attempts WHERE outcome = 'succeeded' GROUP BY job_id HAVING count(*) > 1) t) AS "completedTwice",
      (SELECT count(*)::int FROM job_transitions t WHERE t.from_status IS NOT NULL AND (t.from_status::text || '>' || t.to_status::text) NOT IN (
        'scheduled>queued','scheduled>cancelled','queued>running','queued>cancelled','queued>failed',
        'running>succeeded','running>failed','running>cancelled','running>retrying',
        'retrying>queued','retrying>running','retrying>cancelled','retrying>failed','succeeded>expired')) AS "backwardTransitions",
      (SELECT count(*)::int FROM jobs j WHERE j.type = 'probe' AND (j.attempts > j.max_attempts
         OR (SELECT count(*) FROM job_attempts a WHERE a.job_id = j.id) > j.max_attempts)) AS "overBudget",
      (SELECT count(*)::int FROM job_attempts a JOIN job_attempts b ON a.job_id = b.job_id AND b.attempt = a.attempt + 1
         WHERE a.finished_at IS NULL OR b.started_at < a.finished_at) AS "overlappingAttempts"`,
    [poisonIds],
  );

  // Recovery after each kill: from the kill to the next attempt of each job the victim held.
  const killReports = [];
  for (const k of kills) {
    // Runnable again: the reaper moved the job on (running → retrying); running again: the next attempt started.
    const rows = await q<{ runnable_ms: number | null; recovery_ms: number | null }>(
      `SELECT (extract(epoch FROM (SELECT min(t.at) FROM job_transitions t WHERE t.job_id = a.job_id AND t.from_status = 'running' AND t.at >= a.started_at)) * 1000 - $2)::float8 AS runnable_ms,
              (extract(epoch FROM (SELECT min(b.started_at) FROM job_attempts b WHERE b.job_id = a.job_id AND b.attempt > a.attempt)) * 1000 - $2)::float8 AS recovery_ms
       FROM job_attempts a WHERE a.worker_id LIKE $1 AND a.outcome = 'lost'`,
      [`%:${k.pid}:%`, k.at],
    );
    const worst = (xs: (number | null)[]) => {
      const v = xs.filter((x): x is number => x !== null);
      return v.length ? Math.round(Math.max(...v)) : null;
    };
    killReports.push({
      pid: k.pid,
      inFlight: rows.length,
      runnableMs: worst(rows.map((r) => r.runnable_ms)),
      recoveryMs: worst(rows.map((r) => r.recovery_ms)),
    });
  }

  const report: ChaosReport = {
    jobs: opts.jobs,
    poison: {
      jobs: poisonIds.length,
      deadLettered: poisonRows.filter((r) => r.status === "failed").length,
      attempts: poisonRows.map((r) => r.attempts),
    },
    byStatus,
    lost: opts.jobs - (byStatus.succeeded ?? 0),
    effectRows: checks!.effectRows!,
    jobsWithoutEffect: checks!.jobsWithoutEffect!,
    reExecutions: checks!.reExecutions!,
    completedTwice: checks!.completedTwice!,
    backwardTransitions: checks!.backwardTransitions!,
    overBudget: checks!.overBudget!,
    overlappingAttempts: checks!.overlappingAttempts!,
    kills: killReports,
    terminations,
    seconds,
    ok: false,
  };
  report.ok =
    report.poison.deadLettered === report.poison.jobs &&
    report.poison.attempts.every((a) => a === POISON_BUDGET) &&
    report.lost === 0 &&
    report.effectRows === opts.jobs &&
    report.jobsWithoutEffect === 0 &&
    report.completedTwice === 0 &&
    report.backwardTransitions === 0 &&
    report.overBudget === 0 &&
    report.overlappingAttempts === 0;
  return report;
}

export function formatReport(r: ChaosReport): string {
  const runnable = r.kills.map((k) => k.runnableMs).filter((v): v is number => v !== null);
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  return [
    `jobs ${r.jobs} in ${r.seconds.toFixed(1)} s: ${Object.entries(r.byStatus)
      .map(([s, n]) => `${s} ${n}`)
      .join(", ")}`,
    `lost ${r.lost} · side-effect rows ${r.effectRows} (jobs without one: ${r.jobsWithoutEffect}; re-executions ${r.reExecutions})`,
    `completed twice ${r.completedTwice} · backward transitions ${r.backwardTransitions} · over budget ${r.overBudget} · overlapping attempts ${r.overlappingAttempts}`,
    `poison jobs ${r.poison.jobs}: dead-lettered ${r.poison.deadLettered} after ${r.poison.attempts.join(", ") || "—"} attempts (each attempt killed its worker)`,
    `kills ${r.kills.length} (ours and the poison jobs'), connection terminations ${r.terminations}`,
    ...r.kills.map(
      (k) =>
        `  SIGKILL worker ${k.pid}: ${k.inFlight} jobs in flight` +
        (k.inFlight
          ? `; all runnable again after ${k.runnableMs} ms, ${k.recoveryMs === null ? "not run again (out of budget: dead-lettered)" : `all running again after ${k.recoveryMs} ms`}`
          : ""),
    ),
    runnable.length
      ? `recovery (kill → runnable again): max ${Math.max(...runnable)} ms, median ${median(runnable)} ms; goal ≤ 2 × lease = 6000 ms (a worker seen to exit: at once)`
      : "recovery: no kill caught a job in flight",
    r.ok ? "RESULT: all checks passed" : "RESULT: FAILED",
  ].join("\n");
}
