/**
 * How `npm start` (scripts/supervisor.ts) restarts a worker pool whose process
 * exited: always, after a delay that starts at `initialMs` and doubles with
 * each death of a worker that died young, up to `maxMs`. A worker that stayed
 * up `stableAfterMs` or longer starts the count over.
 */
export type RestartPolicy = { initialMs: number; maxMs: number; stableAfterMs: number };

/** One pool's restart state: restarts so far (since `npm start` began) and deaths in a row of young workers. */
export type RestartState = { restarts: number; quickDeaths: number };

export const initialRestartState: RestartState = { restarts: 0, quickDeaths: 0 };

/** After a worker of the pool died having run `uptimeMs`: the wait before its replacement, and the pool's next state. */
export function nextRestart(
  state: RestartState,
  uptimeMs: number,
  policy: RestartPolicy,
): { delayMs: number; state: RestartState } {
  const quickDeaths = uptimeMs >= policy.stableAfterMs ? 0 : state.quickDeaths;
  // 2^30 already passes any cap: no overflow however long a pool keeps dying.
  const delayMs = Math.min(policy.maxMs, policy.initialMs * 2 ** Math.min(quickDeaths, 30));
  return { delayMs, state: { restarts: state.restarts + 1, quickDeaths: quickDeaths + 1 } };
}

/** worker/index.ts exits with this code when the fleet declared it dead. */
export const WORKER_DECLARED_DEAD = 3;

/** How a worker process ended, as the logs and the worker registry say it: `SIGKILL`, `code 1`, `declared dead`. */
export function describeExit(code: number | null, signal: NodeJS.Signals | null): string {
  if (signal) return signal;
  if (code === WORKER_DECLARED_DEAD) return "declared dead";
  return `code ${code}`;
}

/** A delay as the log says it: `250 ms`, `4 s`, `1.5 s`. */
export function formatDelay(ms: number): string {
  return ms < 1_000 ? `${ms} ms` : `${Number((ms / 1_000).toFixed(1))} s`;
}
