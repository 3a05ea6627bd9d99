/**
 * A long-running part of a process (the admitter, the scheduler, the reaper, the
 * rollups, the pruner, a workload's periodic work): started once when its process
 * starts, stopped once when it stops. Processes start the services they are given
 * (worker/index.ts: the engine's and every registered workload's) and stop them
 * in reverse order (lib/runtime/runner.ts).
 *
 * `loop(spec)` makes one out of a tick:
 *  - timer: a tick every `everyMs()`, or when the last tick asked (sleep-until: it
 *    returns `{ nextInMs }`);
 *  - wake: `service.wake()`, or a notification on one of `wakeOn`'s channels
 *    (through the process's notifier), runs a tick now; after the notifier
 *    reconnects, one tick runs to catch up on what it may have missed;
 *  - coalesce: wakes during a tick cause one more tick after it, not one each;
 *  - sweep: every `sweepEveryMs()` a tick runs with `tick.sweep` set, for a slow
 *    full pass besides the woken ones;
 *  - lock: with `lock`, a tick runs holding that maintenance lock (lib/maintenance.ts)
 *    and is skipped when another process holds it;
 *  - stop waits for the tick in progress, and no tick starts after it.
 * A tick's throw is logged, never fatal; the same failure again is not logged again
 * until a tick succeeds (which says so).
 */
import { logger } from "../log";
import { withMaintenanceLock, type MaintenanceLock } from "../maintenance";
import { notifier } from "./notifier";

export type ServiceContext = {
  /** This process's worker id (the registry's), for log lines and self-exclusion. */
  workerId: string;
  /** Lines worth logging, tagged with the service's name. */
  log: (line: string, level?: "info" | "warn" | "error") => void;
};

export interface Service {
  /** snake_case or kebab-case; log lines read `[name] …`. */
  readonly name: string;
  start(ctx: ServiceContext): Promise<void>;
  stop(): Promise<void>;
}

/** Why a tick runs. */
export type Tick = {
  reason: "start" | "timer" | "wake" | "reconnect" | "sweep";
  /** A full pass is due (`sweepEveryMs`): do everything, not only what the wake-ups named. */
  sweep: boolean;
  /** The payloads of the notifications that woke it since the last tick (coalesced), in order. */
  payloads: string[];
};

/** What a tick returns: lines worth logging, or those and when it wants to run next. */
export type TickResult = string[] | { lines?: string[]; nextInMs?: number };

export type LoopSpec = {
  name: string;
  /** How often a tick runs, in ms (read after every tick): the longest it sleeps unless a tick says otherwise. */
  everyMs(): number;
  /** One tick; returns lines worth logging. A throw is logged, never fatal. */
  run(ctx: ServiceContext, tick: Tick): Promise<TickResult>;
  /** Run a first tick as soon as the service starts (default: after the first interval). */
  runAtStart?: boolean;
  /** Notification channels that wake a tick (their payloads are in `tick.payloads`). */
  wakeOn?: readonly string[];
  /** How often a tick is a sweep (a full pass), in ms; without it no tick is one. */
  sweepEveryMs?(): number;
  /** Run each tick holding this maintenance lock; skipped when another process holds it. */
  lock?: MaintenanceLock;
};

/** A loop's service: it can also be woken by a call. */
export interface LoopService extends Service {
  /** Runs a tick now; during a tick, one more after it. */
  wake(payload?: string): void;
}

/** A service that runs `spec.run` on a timer, when woken, and as a sweep (see above). */
export function loop(spec: LoopSpec): LoopService {
  let ctx: ServiceContext | null = null;
  let stopped = true;
  let timer: NodeJS.Timeout | null = null;
  let sweepTimer: NodeJS.Timeout | null = null;
  let running: Promise<void> | null = null;
  /** The next tick's reason when it was asked for during a tick (coalesced); null: none asked. */
  let pending: { reason: Tick["reason"]; sweep: boolean; payloads: string[] } | null = null;
  let unsubscribes: (() => void)[] = [];
  let failing: { message: string; times: number } | null = null;

  const ask = (reason: Tick["reason"], payload?: string) => {
    pending ??= { reason, sweep: false, payloads: [] };
    if (reason === "sweep") pending.sweep = true;
    if (payload !== undefined) pending.payloads.push(payload);
  };

  const schedule = (ms: number) => {
    if (timer) clearTimeout(timer);
    // A service never keeps its process alive by itself (the worker's pool, the web server do).
    timer = setTimeout(() => trigger("timer"), Math.max(0, ms)).unref();
  };

  const runOne = async (tick: Tick): Promise<number | undefined> => {
    const c = ctx!;
    try {
      let result: TickResult;
      if (spec.lock) {
        const locked = await withMaintenanceLock(spec.lock, () => spec.run(c, tick));
        result = locked.ran ? locked.value : [];
      } else {
        result = await spec.run(c, tick);
      }
      if (failing) {
        c.log(`recovered after ${failing.times} failed tick(s)`);
        failing = null;
      }
      const { lines, nextInMs } = Array.isArray(result) ? { lines: result, nextInMs: undefined } : result;
      for (const line of lines ?? []) c.log(line);
      return nextInMs;
    } catch (e) {
      const message = (e as Error).message;
      if (failing?.message !== message) c.log(`failed: ${message}`, "error");
      failing = { message, times: (failing?.times ?? 0) + 1 };
      return undefined;
    }
  };

  const trigger = (reason: Tick["reason"], payload?: string) => {
    if (stopped) return;
    ask(reason, payload);
    if (running) return; // coalesced: the tick under way runs one more after it
    if (timer) clearTimeout(timer);
    timer = null;
    running = (async () => {
      let nextInMs: number | undefined;
      while (pending && !stopped) {
        const { reason: r, sweep, payloads } = pending;
        pending = null;
        nextInMs = await runOne({ reason: r, sweep, payloads });
      }
      // In the same turn as the last look at `pending` (runOne always awaited first): a wake
      // from now on starts a new run rather than counting on this one to see it.
      running = null;
      if (!stopped) schedule(nextInMs ?? spec.everyMs());
    })();
  };

  return {
    name: spec.name,
    wake(payload) {
      trigger("wake", payload);
    },
    async start(c) {
      ctx = c;
      stopped = false;
      failing = null;
      for (const channel of spec.wakeOn ?? []) {
        const off = await notifier().subscribe(channel, (payload) => trigger("wake", payload), {
          whenDown: "retry",
          onReconnected: () => trigger("reconnect"),
        });
        unsubscribes.push(off);
      }
      if (spec.sweepEveryMs) {
        const every = spec.sweepEveryMs();
        sweepTimer = setInterval(() => trigger("sweep"), every).unref();
      }
      if (spec.runAtStart) trigger("start");
      else schedule(spec.everyMs());
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      if (sweepTimer) clearInterval(sweepTimer);
      timer = sweepTimer = null;
      pending = null;
      unsubscribes.forEach((off) => off());
      unsubscribes = [];
      await running;
    },
  };
}

/** A context for a service outside a worker (tests, scripts). */
export function serviceContext(workerId: string, name: string): ServiceContext {
  const log = logger.child({ workerId, service: name });
  return { workerId, log: (line, level = "info") => log[level](`[${name}] ${line}`) };
}
