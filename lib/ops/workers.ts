/**
 * The worker fleet as the console shows it: each worker's row, and a summary
 * per pool (the workers of one host serving the same queues: `npm start`'s
 * interactive, bulk and webhooks pools, each worker the replacement of the one
 * before). Pure: the API computes it, the Workers page renders it.
 */

export type WorkerDto = {
  id: string;
  host: string;
  pid: number;
  version: string;
  queues: string[];
  concurrency: number;
  runningJobs: number;
  startedAt: string;
  heartbeatAt: string;
  stoppedAt: string | null;
  /** running | stopping | stopped | dead, or unresponsive: running but silent past WORKER_DEAD_AFTER_MS. */
  state: string;
  /** How many times `npm start` had restarted this worker's pool when it started (0: its first worker). */
  restarts: number;
  /** How the worker it replaced ended: `SIGKILL`, `code 1`, `declared dead`; null for a first start. */
  previousExit: string | null;
};

export type WorkerPoolDto = {
  host: string;
  queues: string[];
  /** Workers running or stopping (unresponsive ones not counted). */
  live: number;
  /** Workers that stopped heartbeating and are not yet declared dead. */
  unresponsive: number;
  /** Stopped or dead workers of the pool among those listed. */
  exited: number;
  /** Slots and running jobs of its live workers. */
  concurrency: number;
  runningJobs: number;
  /** Its newest worker's restart count, and how the worker before that one ended. */
  restarts: number;
  previousExit: string | null;
  /** When its newest worker started. */
  startedAt: string;
  /** When its last worker stopped or was declared dead, if any did. */
  lastExitAt: string | null;
};

/** Live means running or stopping; a worker that went silent is listed apart, as unresponsive. */
export function isLive(state: string): boolean {
  return state === "running" || state === "stopping";
}

/** What a restarted worker's row says: "restart 3 · previous exited with SIGKILL"; null for a first start. */
export function describeRestart(w: { restarts: number; previousExit: string | null }): string | null {
  if (!w.restarts) return null;
  const previous =
    w.previousExit === "declared dead"
      ? "previous was declared dead"
      : w.previousExit
        ? `previous exited with ${w.previousExit}`
        : null;
  return previous ? `restart ${w.restarts} · ${previous}` : `restart ${w.restarts}`;
}

/** One summary per pool (host and queues), in the order the pools' newest workers started, newest first. */
export function summarizePools(workers: WorkerDto[]): WorkerPoolDto[] {
  const pools = new Map<string, { newest: WorkerDto; members: WorkerDto[] }>();
  for (const w of workers) {
    const key = `${w.host}\n${w.queues.join(",")}`;
    const pool = pools.get(key);
    if (!pool) pools.set(key, { newest: w, members: [w] });
    else {
      pool.members.push(w);
      if (w.startedAt > pool.newest.startedAt) pool.newest = w;
    }
  }
  return [...pools.values()]
    .sort((a, b) => (a.newest.startedAt < b.newest.startedAt ? 1 : a.newest.startedAt > b.newest.startedAt ? -1 : 0))
    .map(({ newest, members }) => {
      const live = members.filter((w) => isLive(w.state));
      const exitTimes = members.map((w) => w.stoppedAt).filter((t): t is string => t !== null);
      return {
        host: newest.host,
        queues: newest.queues,
        live: live.length,
        unresponsive: members.filter((w) => w.state === "unresponsive").length,
        exited: members.filter((w) => w.state === "stopped" || w.state === "dead").length,
        concurrency: live.reduce((n, w) => n + w.concurrency, 0),
        runningJobs: live.reduce((n, w) => n + w.runningJobs, 0),
        restarts: newest.restarts,
        previousExit: newest.previousExit,
        startedAt: newest.startedAt,
        lastExitAt: exitTimes.length ? exitTimes.reduce((a, b) => (a > b ? a : b)) : null,
      };
    });
}
