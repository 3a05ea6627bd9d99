/**
 * The schedule chaos harness behind `npm run chaos:schedules` and its short
 * version in `npm test`: several real worker processes (each runs a scheduler)
 * materialize schedules that fire every second, one per missed-run policy and
 * one per overlap policy, while workers are SIGKILLed and restarted and, once,
 * every worker is stopped (SIGSTOP) long enough for occurrences to be missed.
 * Then the schedules are paused, the runs allowed to end, and SQL checks what
 * must hold: no occurrence run twice, none missing under `all`, one catch-up
 * run per outage under `once` and none under `skip`, the overlap rules, and
 * nothing executed twice unless its worker was lost. Lag is measured, not judged.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream, type WriteStream } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { Principal } from "@/lib/auth/principal";
import { pool } from "@/lib/db";
import { createSchedule, pauseSchedule } from "@/lib/schedules/service";
import type { MissedRunPolicy, OverlapPolicy } from "@/lib/schedules/schema";
import "@/lib/workloads";
import { workerArgs } from "../helpers/worker";

export type ScheduleChaosOptions = {
  databaseUrl: string;
  /** Who makes the schedules (a member of a tenant). */
  principal: Principal;
  /** Worker processes (at least 3). */
  workers: number;
  concurrency: number;
  /** How long the schedules fire, from their creation to their pause. */
  durationMs: number;
  /** A random worker is SIGKILLed this often (never during the stop); it is restarted restartAfterMs later. */
  killEveryMs: number;
  restartAfterMs?: number;
  /** Every worker is SIGSTOPped once, for this long, then SIGCONTed. */
  stopMs: number;
  /** When the stop begins, from the schedules' creation (default: so that it sits mid-run). */
  stopAtMs?: number;
  /** SCHEDULE_MISSED_AFTER_MS for the workers (and the checks: a catch-up run is created later than this after its time). */
  missedAfterMs: number;
  /** How long each run of the overlap schedules sleeps (longer than their 1 s period, so runs overlap). */
  overlapSleepMs: number;
  /**
   * Slack for "made no earlier than the previous run ended" (default 0). Both are compared by the
   * clock_timestamp() of their job_transitions rows — the insert, the final status — not by created_at
   * (its transaction's start, which may precede the end it then saw committed).
   */
  overlapToleranceMs?: number;
  log: (line: string) => void;
};

export type Check = { name: string; ok: boolean; detail: string };
export type Lag = { n: number; p50: number; p99: number; max: number };
export type ScheduleSummary = {
  name: string;
  missedRunPolicy: MissedRunPolicy;
  overlapPolicy: OverlapPolicy;
  runs: number;
  byStatus: Record<string, number>;
  catchUpRuns: number;
  missedCount: number;
  overlapSkippedCount: number;
  events: Record<string, number>;
};

export type ScheduleChaosReport = {
  seconds: number;
  workers: number;
  kills: number;
  /** How long kills waited for a restarted worker to start (a slow machine). */
  killsDeferredMs: number;
  declaredDeadExits: number;
  otherExits: number;
  stop: { atMs: number; ms: number };
  /** Intervals (ms from the schedules' creation) when no worker process with a started scheduler was running. */
  outages: { fromMs: number; toMs: number }[];
  schedules: ScheduleSummary[];
  checks: Check[];
  lag: {
    /** Runs that were not catch-up runs nor released from a buffer. */
    onTime: { materialize: Lag; start: Lag };
    /** The same, less occurrences due in an outage or just before one. */
    whileUp: { materialize: Lag; start: Lag };
  };
  workerLog: string;
  ok: boolean;
};

type Spec = {
  name: string;
  missedRunPolicy: MissedRunPolicy;
  overlapPolicy: OverlapPolicy;
  sleepMs: number;
  catchupWindowSeconds?: number;
  maxCatchup?: number;
};

type Proc = {
  child: ChildProcess;
  pid: number;
  spawnedAt: number;
  readyAt: number | null;
  exitedAt: number | null;
  killedByUs: boolean;
  exitCode: number | null;
};

type RunRow = {
  id: string;
  scheduleId: string;
  status: string;
  sf: number;
  created: number;
  started: number | null;
  finished: number | null;
  /** When its row was inserted and when it reached its final status (job_transitions, clock_timestamp()). */
  made: number;
  ended: number | null;
  cancelRequested: boolean;
  executions: number;
  attempts: number;
  /** Its attempts in order, as `outcome:errorClass:message`. */
  attemptLog: string[];
};

const q = async <T>(text: string, values: unknown[] = []): Promise<T[]> =>
  (await pool().query(text, values)).rows as T[];

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}

function lagOf(xs: number[]): Lag {
  return { n: xs.length, p50: percentile(xs, 50), p99: percentile(xs, 99), max: xs.length ? Math.max(...xs) : NaN };
}

const OPEN = new Set(["scheduled", "queued", "running", "retrying"]);

export async function runScheduleChaos(opts: ScheduleChaosOptions): Promise<ScheduleChaosReport> {
  if (opts.workers < 3) throw new Error("the schedule chaos harness needs at least 3 workers");
  const restartAfterMs = opts.restartAfterMs ?? 1_000;
  const tolerance = opts.overlapToleranceMs ?? 0;
  const started = Date.now();
  const logPath = path.join(tmpdir(), `conveyor-chaos-schedules-${process.pid}.log`);
  const workerLog: WriteStream = createWriteStream(logPath);
  opts.log(`[chaos:schedules] worker output: ${logPath}`);

  const env = {
    DATABASE_URL: opts.databaseUrl,
    WORKER_HEARTBEAT_MS: "500",
    WORKER_DEAD_AFTER_MS: "2000",
    REAPER_INTERVAL_MS: "250",
    WORKER_SHUTDOWN_GRACE_MS: "2000",
    SCHEDULE_MISSED_AFTER_MS: String(opts.missedAfterMs),
    // Runs of one member, a run a second per schedule: what is measured is exactly-once, not the quotas.
    QUOTA_JOBS_PER_USER: "1000000",
    QUOTA_JOBS_PER_TENANT: "1000000",
    PGAPPNAME: "conveyor-chaos-schedules-worker",
  };
  const procs: Proc[] = [];
  let declaredDeadExits = 0;
  let otherExits = 0;
  /** Slot i's process, or null while it waits for its restart at restartAt[i]. */
  const slots: (Proc | null)[] = [];
  const restartAt: number[] = [];

  const spawnWorker = (slot: number): Proc => {
    const child = spawn(process.execPath, workerArgs("--concurrency", String(opts.concurrency)), {
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe", "ipc"],
    });
    const p: Proc = {
      child,
      pid: child.pid!,
      spawnedAt: Date.now(),
      readyAt: null,
      exitedAt: null,
      killedByUs: false,
      exitCode: null,
    };
    let err = "";
    const stamp = (d: Buffer) => d.toString().replace(/^(?=.)/gm, `${new Date().toISOString()} [${p.pid}] `);
    child.stdout!.on("data", (d: Buffer) => {
      workerLog.write(stamp(d));
      if (p.readyAt === null && /\[worker\] \S+ started/.test(d.toString())) p.readyAt = Date.now();
    });
    child.stderr!.on("data", (d: Buffer) => {
      workerLog.write(stamp(d));
      err = (err + d.toString()).slice(-4000);
    });
    child.on("exit", (code) => {
      p.exitedAt = Date.now();
      p.exitCode = code;
      if (p.killedByUs) return;
      if (code === 3) declaredDeadExits++;
      else otherExits++;
      opts.log(
        code === 3
          ? `[chaos:schedules] worker ${p.pid} was declared dead by the fleet (exit 3); restarting it`
          : `[chaos:schedules] worker ${p.pid} exited ${code}: ${err.trim().split("\n").slice(-3).join(" | ")}`,
      );
      if (slots[slot] === p) {
        slots[slot] = null;
        restartAt[slot] = Date.now() + restartAfterMs;
      }
    });
    procs.push(p);
    slots[slot] = p;
    return p;
  };
  const alive = (p: Proc | null): p is Proc => p !== null && p.exitedAt === null;

  for (let i = 0; i < opts.workers; i++) spawnWorker(i);
  const readyBy = Date.now() + 180_000;
  while (!slots.every((p) => alive(p) && p.readyAt !== null)) {
    if (Date.now() > readyBy) throw new Error("the workers did not start within 3 minutes");
    for (let i = 0; i < slots.length; i++) if (!alive(slots[i]!) && Date.now() >= restartAt[i]!) spawnWorker(i);
    await sleep(100);
  }
  opts.log(`[chaos:schedules] ${opts.workers} workers up; creating the schedules`);

  const specs: Spec[] = [
    ...(["skip", "once", "all"] as const).map((m): Spec => ({
      name: `missed ${m}`,
      missedRunPolicy: m,
      overlapPolicy: "allow",
      sleepMs: 0,
      ...(m === "all"
        ? { catchupWindowSeconds: Math.ceil((opts.durationMs + opts.stopMs) / 1000) + 600, maxCatchup: 100 }
        : {}),
    })),
    ...(["skip", "buffer_one", "allow", "cancel_other"] as const).map((o): Spec => ({
      name: `overlap ${o}`,
      missedRunPolicy: "once",
      overlapPolicy: o,
      sleepMs: opts.overlapSleepMs,
    })),
  ];
  const ids = new Map<string, Spec>();
  for (const s of specs) {
    const made = await createSchedule(
      opts.principal,
      {
        name: `chaos ${s.name} ${process.pid}`,
        cron: "* * * * * *",
        timezone: "UTC",
        task: "probe",
        input: { sleepMs: s.sleepMs },
        missedRunPolicy: s.missedRunPolicy,
        overlapPolicy: s.overlapPolicy,
        ...(s.catchupWindowSeconds !== undefined ? { catchupWindowSeconds: s.catchupWindowSeconds } : {}),
        ...(s.maxCatchup !== undefined ? { maxCatchup: s.maxCatchup } : {}),
      },
      { internal: true },
    );
    ids.set(made.id, s);
  }
  const runStart = Date.now();
  const runEnd = runStart + opts.durationMs;
  const stopAt = runStart + (opts.stopAtMs ?? Math.max(0, (opts.durationMs - opts.stopMs) / 2));
  let stoppedAt: number | null = null;
  let contAt: number | null = null;
  let kills = 0;
  let deferredKillMs = 0;
  let nextKill = runStart + opts.killEveryMs;

  while (Date.now() < runEnd) {
    const now = Date.now();
    if (stoppedAt === null && now >= stopAt) {
      const live = slots.filter(alive);
      for (const p of live) p.child.kill("SIGSTOP");
      stoppedAt = Date.now();
      opts.log(`[chaos:schedules] SIGSTOP every worker (${live.map((p) => p.pid).join(", ")}) for ${opts.stopMs} ms`);
    } else if (stoppedAt !== null && contAt === null) {
      if (now >= stoppedAt + opts.stopMs) {
        for (const p of slots.filter(alive)) p.child.kill("SIGCONT");
        contAt = Date.now();
        opts.log(`[chaos:schedules] SIGCONT every worker`);
        // Restarts held back during the stop happen now; the next kill a little later.
        nextKill = Math.max(nextKill, contAt + opts.killEveryMs / 2);
      }
    } else {
      for (let i = 0; i < slots.length; i++) {
        if (!alive(slots[i]!) && now >= restartAt[i]!) spawnWorker(i);
      }
      // A kill only when the whole fleet runs (every slot's process started its scheduler): the
      // kills test a fleet losing a member, the stop tests a fleet losing all. On a slow machine a
      // restarted worker may take long to start; the kill waits for it rather than piling up.
      const ready = slots.every((p) => alive(p) && p.readyAt !== null);
      if (now >= nextKill && !ready) deferredKillMs += 50;
      if (now >= nextKill && ready) {
        const i = Math.floor(Math.random() * slots.length);
        const victim = slots[i]!;
        victim.killedByUs = true;
        victim.child.kill("SIGKILL");
        slots[i] = null;
        restartAt[i] = Date.now() + restartAfterMs;
        kills++;
        opts.log(`[chaos:schedules] SIGKILL worker ${victim.pid}`);
        nextKill = Date.now() + opts.killEveryMs;
      }
    }
    await sleep(50);
  }
  if (contAt === null) {
    // The run was shorter than planned: the workers must not stay stopped.
    for (const p of slots.filter(alive)) p.child.kill("SIGCONT");
    contAt = Date.now();
  }

  // Pause every schedule, then let the open runs end on a full fleet.
  for (const id of ids.keys()) await pauseSchedule(opts.principal, id, true);
  const pausedAt = Date.now();
  opts.log(`[chaos:schedules] schedules paused; letting the open runs end`);
  const idList = [...ids.keys()];
  const drainBy = Date.now() + 120_000;
  for (;;) {
    for (let i = 0; i < slots.length; i++) if (!alive(slots[i]!) && Date.now() >= restartAt[i]!) spawnWorker(i);
    const [row] = await q<{ n: number }>(
      `SELECT count(*)::int AS n FROM schedule_runs r JOIN jobs j ON j.id = r.job_id
        WHERE r.schedule_id = ANY($1::uuid[]) AND j.status IN ('scheduled', 'queued', 'running', 'retrying')`,
      [idList],
    );
    if (row!.n === 0 || Date.now() > drainBy) break;
    await sleep(200);
  }
  await Promise.all(
    slots.filter(alive).map(
      (p) =>
        new Promise<void>((resolve) => {
          if (p.exitedAt !== null) return resolve();
          p.killedByUs = true;
          p.child.once("exit", () => resolve());
          p.child.kill("SIGTERM");
          setTimeout(() => p.child.kill("SIGKILL"), 10_000).unref();
        }),
    ),
  );
  await new Promise<void>((resolve) => workerLog.end(() => resolve()));
  const seconds = (Date.now() - started) / 1000;

  // ── Outages: when no worker with a started scheduler ran (stopped ones do not run). ──
  const up: [number, number][] = [];
  for (const p of procs) {
    if (p.readyAt === null) continue;
    const end = p.exitedAt ?? Date.now();
    const parts: [number, number][] =
      stoppedAt !== null && contAt !== null
        ? [
            [p.readyAt, Math.min(end, stoppedAt)],
            [Math.max(p.readyAt, contAt), end],
          ]
        : [[p.readyAt, end]];
    for (const [a, b] of parts) if (b > a) up.push([a, b]);
  }
  up.sort((x, y) => x[0] - y[0]);
  const outages: [number, number][] = [];
  let cover = runStart;
  for (const [a, b] of up) {
    if (a > cover && cover < pausedAt) outages.push([cover, Math.min(a, pausedAt)]);
    cover = Math.max(cover, b);
  }
  if (cover < pausedAt) outages.push([cover, pausedAt]);
  // An occurrence is affected by an outage if due in it or just before it (its tick may not have run).
  const inOutage = (t: number) => outages.some(([a, b]) => t >= a - 1_000 && t <= b);

  // ── What happened, from the database ──
  const runs = await q<RunRow>(
    `SELECT j.id, r.schedule_id AS "scheduleId", j.status::text AS status,
            (extract(epoch FROM r.scheduled_for) * 1000)::float8 AS sf,
            (extract(epoch FROM j.created_at) * 1000)::float8 AS created,
            (extract(epoch FROM j.started_at) * 1000)::float8 AS started,
            (extract(epoch FROM j.finished_at) * 1000)::float8 AS finished,
            (SELECT extract(epoch FROM min(t.at)) * 1000 FROM job_transitions t
              WHERE t.job_id = j.id AND t.from_status IS NULL)::float8 AS made,
            (SELECT extract(epoch FROM min(t.at)) * 1000 FROM job_transitions t
              WHERE t.job_id = j.id AND t.to_status IN ('succeeded', 'failed', 'cancelled'))::float8 AS ended,
            j.cancel_requested_at IS NOT NULL AS "cancelRequested",
            coalesce(e.executions, 0)::int AS executions,
            (SELECT count(*) FROM job_attempts a WHERE a.job_id = j.id)::int AS attempts,
            coalesce((SELECT array_agg(a.outcome || ':' || coalesce(a.error_class, '') || ':' || coalesce(a.error_message, '')
                                ORDER BY a.attempt, a.resume)
                        FROM job_attempts a WHERE a.job_id = j.id), '{}') AS "attemptLog"
       FROM schedule_runs r JOIN jobs j ON j.id = r.job_id LEFT JOIN probe_effects e ON e.job_id = j.id
      WHERE r.schedule_id = ANY($1::uuid[])
      ORDER BY made, sf`,
    [idList],
  );
  const events = await q<{ scheduleId: string; kind: string; sf: number }>(
    `SELECT schedule_id AS "scheduleId", kind, (extract(epoch FROM scheduled_for) * 1000)::float8 AS sf
       FROM schedule_events WHERE schedule_id = ANY($1::uuid[])`,
    [idList],
  );
  const rows = await q<{ id: string; missedCount: number; overlapSkippedCount: number }>(
    `SELECT id, missed_count AS "missedCount", overlap_skipped_count AS "overlapSkippedCount"
       FROM schedules WHERE id = ANY($1::uuid[])`,
    [idList],
  );
  const [dup] = await q<{ n: number }>(
    `SELECT count(*)::int AS n FROM (SELECT 1 FROM schedule_runs WHERE schedule_id = ANY($1::uuid[])
        GROUP BY schedule_id, scheduled_for HAVING count(*) > 1) d`,
    [idList],
  );

  const checks: Check[] = [];
  const check = (name: string, ok: boolean, detail: string) => checks.push({ name, ok, detail });
  const summaries: ScheduleSummary[] = [];
  const byName = new Map<string, { id: string; runs: RunRow[]; events: typeof events; catchUps: RunRow[] }>();
  const count = <T>(xs: T[], key: (x: T) => string) =>
    xs.reduce<Record<string, number>>((acc, x) => ((acc[key(x)] = (acc[key(x)] ?? 0) + 1), acc), {});
  for (const [id, spec] of ids) {
    const own = runs.filter((r) => r.scheduleId === id);
    const ev = events.filter((e) => e.scheduleId === id);
    const catchUps = own.filter((r) => r.created - r.sf > opts.missedAfterMs);
    const row = rows.find((r) => r.id === id)!;
    byName.set(spec.name, { id, runs: own, events: ev, catchUps });
    summaries.push({
      name: spec.name,
      missedRunPolicy: spec.missedRunPolicy,
      overlapPolicy: spec.overlapPolicy,
      runs: own.length,
      byStatus: count(own, (r) => r.status),
      catchUpRuns: catchUps.length,
      missedCount: row.missedCount,
      overlapSkippedCount: row.overlapSkippedCount,
      events: count(ev, (e) => e.kind),
    });
  }
  const fmtT = (t: number) => `+${((t - runStart) / 1000).toFixed(1)}s`;
  const stopHit = (ts: number[]) => ts.some((t) => stoppedAt !== null && t >= stoppedAt - 1_000 && t <= contAt!);

  // Everywhere: one run per occurrence, each ended, nothing executed twice unless its worker was lost.
  check("no duplicate (schedule, scheduledFor)", dup!.n === 0, `${dup!.n} duplicated occurrences`);
  const open = runs.filter((r) => OPEN.has(r.status));
  const failed = runs.filter((r) => r.status === "failed");
  const cancelledElsewhere = runs.filter(
    (r) => r.status === "cancelled" && r.scheduleId !== byName.get("overlap cancel_other")!.id,
  );
  check(
    "every run ended (succeeded; cancelled only by cancel_other)",
    open.length === 0 && failed.length === 0 && cancelledElsewhere.length === 0,
    `${runs.length} runs: ${Object.entries(count(runs, (r) => r.status))
      .map(([s, n]) => `${s} ${n}`)
      .join(
        ", ",
      )}; open ${open.length}, failed ${failed.length}, cancelled outside cancel_other ${cancelledElsewhere.length}`,
  );
  // A run may execute again only when an earlier attempt was cut short by its worker: killed and
  // reaped (lost, crashed), stopped past its lease (lease_lost) or shut down — its effect may have
  // been written before its success could be. Any other re-execution is a failure.
  const cutShort = (a: string) => {
    const [outcome, errorClass] = a.split(":");
    return outcome === "lost" || ["crashed", "lease_lost", "shutdown"].includes(errorClass!);
  };
  const reExecuted = runs.filter((r) => r.executions > 1);
  const twice = reExecuted.filter((r) => !r.attemptLog.slice(0, -1).some(cutShort));
  const overAttempts = runs.filter((r) => r.executions > r.attempts);
  const noEffect = runs.filter((r) => r.status === "succeeded" && r.executions === 0);
  const causes = count(
    reExecuted.flatMap((r) => r.attemptLog.slice(0, -1).map((a) => a.split(":").slice(0, 2).join(" "))),
    (c) => c,
  );
  check(
    "nothing ran twice (a re-execution only after its worker was killed or stopped past its lease)",
    twice.length === 0 && overAttempts.length === 0 && noEffect.length === 0,
    `re-executed ${reExecuted.length}` +
      (reExecuted.length
        ? ` (earlier attempts: ${Object.entries(causes)
            .map(([c, k]) => `${c} ×${k}`)
            .join(", ")})`
        : "") +
      `; without such a cause ${twice.length}` +
      (twice.length
        ? ` (${twice
            .slice(0, 3)
            .map((r) => `${r.id}: ${r.attemptLog.join(" → ")}`)
            .join("; ")})`
        : "") +
      `; executions > attempts ${overAttempts.length}; succeeded without its side effect ${noEffect.length}`,
  );
  const disordered = (rs: RunRow[]) => rs.filter((r, i) => i > 0 && r.sf < rs[i - 1]!.sf);
  const outOfOrder = [...byName.values()].flatMap((s) => disordered(s.runs));
  check(
    "runs are made in occurrence order (buffer_one: the buffered run comes when the open run ends, before any later occurrence)",
    outOfOrder.length === 0,
    outOfOrder.length
      ? `${outOfOrder.length} runs created after a run of a later occurrence, e.g. ` +
          outOfOrder
            .slice(0, 3)
            .map((r) => {
              const own = byName.get(ids.get(r.scheduleId)!.name)!.runs;
              const before = own.find((x) => x.sf > r.sf && x.made <= r.made)!;
              return (
                `${ids.get(r.scheduleId)!.name}: occurrence ${fmtT(r.sf)} run made at ${fmtT(r.made)}, ` +
                `after the run of the later occurrence ${fmtT(before.sf)} (made at ${fmtT(before.made)})`
              );
            })
            .join("; ")
      : "yes",
  );

  // Missed-run policies.
  {
    const s = byName.get("missed all")!;
    const have = new Set(s.runs.map((r) => r.sf));
    const sfs = s.runs.map((r) => r.sf);
    const missing: number[] = [];
    if (sfs.length) for (let t = Math.min(...sfs); t <= Math.max(...sfs); t += 1_000) if (!have.has(t)) missing.push(t);
    const missedCount = summaries.find((x) => x.name === "missed all")!.missedCount;
    check(
      "all: no missing occurrence",
      sfs.length > 0 && missing.length === 0 && missedCount === 0,
      `${s.runs.length} runs over ${sfs.length ? (Math.max(...sfs) - Math.min(...sfs)) / 1000 + 1 : 0} s, missing ${missing.length}` +
        (missing.length
          ? ` (${missing
              .slice(0, 5)
              .map((t) => new Date(t).toISOString())
              .join(", ")})`
          : "") +
        `, missed_count ${missedCount}`,
    );
    check(
      "all: the outage's occurrences were caught up",
      s.catchUps.length > 0 && stopHit(s.catchUps.map((r) => r.sf)),
      `${s.catchUps.length} catch-up runs (${s.catchUps.map((r) => fmtT(r.sf)).join(", ")})`,
    );
  }
  /** Consecutive seconds of occurrences that were missed (or caught up): one group per outage the schedule saw. */
  const groups = (ts: number[]): number[][] => {
    const sorted = [...new Set(ts)].sort((a, b) => a - b);
    const out: number[][] = [];
    for (const t of sorted) {
      const last = out[out.length - 1];
      if (last && t - last[last.length - 1]! <= 1_000) last.push(t);
      else out.push([t]);
    }
    return out;
  };
  {
    const s = byName.get("missed once")!;
    const missed = s.events.filter((e) => e.kind === "missed").map((e) => e.sf);
    const gs = groups([...missed, ...s.catchUps.map((r) => r.sf)]);
    const perGroup = gs.map((g) => s.catchUps.filter((r) => g.includes(r.sf)));
    const latest = gs.every((g, i) => perGroup[i]!.length === 1 && perGroup[i]![0]!.sf === g[g.length - 1]);
    const missedCount = summaries.find((x) => x.name === "missed once")!.missedCount;
    check(
      "once: exactly one catch-up run per outage, for its latest occurrence",
      gs.length > 0 && latest && missedCount > 0 && stopHit(gs.flat()),
      `${gs.length} outage(s) seen (${gs.map((g) => `${fmtT(g[0]!)}…${fmtT(g[g.length - 1]!)}`).join(", ")}), ` +
        `catch-up runs per outage [${perGroup.map((p) => p.length).join(", ")}], missed_count ${missedCount}`,
    );
  }
  {
    const s = byName.get("missed skip")!;
    const missed = s.events.filter((e) => e.kind === "missed").map((e) => e.sf);
    const missedCount = summaries.find((x) => x.name === "missed skip")!.missedCount;
    check(
      "skip: no catch-up run, the missed ones counted",
      s.catchUps.length === 0 && missedCount > 0 && stopHit(missed),
      `catch-up runs ${s.catchUps.length}, missed_count ${missedCount} (${groups(missed).length} outage(s))`,
    );
  }

  // Overlap policies (runs in the order they were made).
  const gaps = (rs: RunRow[]) =>
    rs.slice(1).map((r, i) => ({ next: r, prev: rs[i]!, gap: r.made - (rs[i]!.ended ?? Infinity) }));
  const worst = (gs: { gap: number }[]) => (gs.length ? Math.min(...gs.map((g) => g.gap)) : NaN);
  for (const policy of ["skip", "buffer_one"] as const) {
    const s = byName.get(`overlap ${policy}`)!;
    const gs = gaps(s.runs);
    const overlapped = gs.filter((g) => g.gap < -tolerance);
    const skipped = s.events.filter((e) => e.kind === "overlap_skipped").length;
    const buffered = new Set(s.events.filter((e) => e.kind === "buffered").map((e) => e.sf));
    const released = s.runs.filter((r) => buffered.has(r.sf)).length;
    const exercised = policy === "skip" ? skipped > 0 : released > 0;
    check(
      `overlap ${policy}: no run made while the previous one was open`,
      s.runs.length > 1 && overlapped.length === 0 && exercised,
      `${s.runs.length} runs, ${overlapped.length} made before the previous ended (tolerance ${tolerance} ms; ` +
        `closest: ${worst(gs).toFixed(0)} ms after it ended)` +
        (policy === "skip"
          ? `, ${skipped} occurrences skipped`
          : `, ${buffered.size} occurrences buffered, ${released} of them run`),
    );
  }
  {
    const s = byName.get("overlap allow")!;
    const overlapping = gaps(s.runs).filter((g) => g.gap < 0).length;
    check(
      "overlap allow: runs overlapped",
      overlapping > 0,
      `${overlapping} runs made while the previous one was open`,
    );
  }
  {
    const s = byName.get("overlap cancel_other")!;
    const bad = gaps(s.runs).filter((g) => g.prev.status !== "cancelled" && g.gap < -tolerance);
    const cancelled = s.runs.filter((r) => r.status === "cancelled").length;
    check(
      "overlap cancel_other: every run but the newest was cancelled or had ended before the next",
      s.runs.length > 1 && bad.length === 0 && cancelled > 0,
      `${s.runs.length} runs, ${cancelled} cancelled, ${bad.length} left running beside a newer one` +
        (bad.length
          ? ` (e.g. ${bad
              .slice(0, 3)
              .map(
                (g) =>
                  `${new Date(g.prev.sf).toISOString()} ${g.prev.status}${g.prev.cancelRequested ? " despite a cancel request" : ""}, ended ${(-g.gap).toFixed(0)} ms after the next was made`,
              )
              .join("; ")})`
          : ""),
    );
  }

  // Lag: runs made on time (not caught up, not released from a buffer); then also less the outages.
  const bufferedOcc = new Set(events.filter((e) => e.kind === "buffered").map((e) => `${e.scheduleId} ${e.sf}`));
  const onTime = runs.filter(
    (r) => r.created - r.sf <= opts.missedAfterMs && !bufferedOcc.has(`${r.scheduleId} ${r.sf}`),
  );
  const whileUp = onTime.filter((r) => !inOutage(r.sf));
  const lags = (rs: RunRow[]) => ({
    materialize: lagOf(rs.map((r) => r.created - r.sf)),
    start: lagOf(rs.filter((r) => r.started !== null).map((r) => r.started! - r.sf)),
  });

  const report: ScheduleChaosReport = {
    seconds,
    workers: opts.workers,
    kills,
    killsDeferredMs: deferredKillMs,
    declaredDeadExits,
    otherExits,
    stop: { atMs: (stoppedAt ?? runStart) - runStart, ms: (contAt ?? runStart) - (stoppedAt ?? runStart) },
    outages: outages.map(([a, b]) => ({ fromMs: a - runStart, toMs: b - runStart })),
    schedules: summaries,
    checks,
    lag: { onTime: lags(onTime), whileUp: lags(whileUp) },
    workerLog: logPath,
    ok: checks.every((c) => c.ok),
  };
  return report;
}

export function formatScheduleReport(r: ScheduleChaosReport): string {
  const ms = (n: number) => (Number.isFinite(n) ? `${Math.round(n)} ms` : "—");
  const lag = (l: { materialize: Lag; start: Lag }) =>
    `materialization (created − scheduledFor) p50 ${ms(l.materialize.p50)}, p99 ${ms(l.materialize.p99)}, max ${ms(l.materialize.max)} over ${l.materialize.n} runs; ` +
    `start (started − scheduledFor) p50 ${ms(l.start.p50)}, p99 ${ms(l.start.p99)}, max ${ms(l.start.max)} over ${l.start.n}`;
  return [
    `${r.workers} workers, ${r.seconds.toFixed(1)} s in all; ${r.kills} SIGKILLs (held back ${(r.killsDeferredMs / 1000).toFixed(1)} s in all until every worker ran), ${r.declaredDeadExits} exits after being declared dead, ${r.otherExits} other exits`,
    `SIGSTOP of every worker at +${(r.stop.atMs / 1000).toFixed(1)} s for ${(r.stop.ms / 1000).toFixed(1)} s`,
    `outages (no scheduler running): ${
      r.outages.map((o) => `+${(o.fromMs / 1000).toFixed(1)}…+${(o.toMs / 1000).toFixed(1)} s`).join(", ") || "none"
    }`,
    "",
    "| schedule | runs | statuses | catch-up runs | missed_count | overlap skips | events |",
    "|---|---|---|---|---|---|---|",
    ...r.schedules.map(
      (s) =>
        `| ${s.name} (missed ${s.missedRunPolicy}, overlap ${s.overlapPolicy}) | ${s.runs} | ${Object.entries(
          s.byStatus,
        )
          .map(([k, n]) => `${k} ${n}`)
          .join(", ")} | ${s.catchUpRuns} | ${s.missedCount} | ${s.overlapSkippedCount} | ${
          Object.entries(s.events)
            .map(([k, n]) => `${k} ${n}`)
            .join(", ") || "—"
        } |`,
    ),
    "",
    ...r.checks.map((c) => `${c.ok ? "ok  " : "FAIL"} ${c.name}: ${c.detail}`),
    "",
    `lag, on-time runs: ${lag(r.lag.onTime)}`,
    `lag, on-time runs due while a scheduler ran: ${lag(r.lag.whileUp)}`,
    `worker output: ${r.workerLog}`,
    r.ok ? "RESULT: all checks passed" : "RESULT: FAILED",
  ].join("\n");
}
