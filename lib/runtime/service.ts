/**
 * A long-running part of a process (the admitter, the scheduler, the reaper, the
 * rollups, the pruner, a workload's periodic work): started once when its process
 * starts, stopped once when it stops. Processes start the services they are given
 * (worker/index.ts: the engine's and every registered workload's) and stop them
 * in reverse order.
 *
 * Skeleton for issue 33 (the runtime): the interface is fixed; `loop` is a first,
 * plain implementation that the runtime work replaces with wake / coalesce /
 * sleep-until / sweep behaviour without changing its signature.
 */
import { logger } from "../log";

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

export type LoopSpec = {
  name: string;
  /** How often a tick runs, in ms (read at start). */
  everyMs(): number;
  /** One tick; returns lines worth logging. A throw is logged, never fatal. */
  run(ctx: ServiceContext): Promise<string[]>;
  /** Run a first tick as soon as the service starts (default: after the first interval). */
  runAtStart?: boolean;
};

/** A service that runs `spec.run` on a timer. */
export function loop(spec: LoopSpec): Service {
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> | null = null;
  return {
    name: spec.name,
    async start(ctx) {
      const tick = () => {
        if (running) return;
        running = spec
          .run(ctx)
          .then((lines) => lines.forEach((line) => ctx.log(line)))
          .catch((e: Error) => ctx.log(`failed: ${e.message}`, "error"))
          .finally(() => {
            running = null;
          });
      };
      timer = setInterval(tick, spec.everyMs());
      if (spec.runAtStart) tick();
    },
    async stop() {
      if (timer) clearInterval(timer);
      timer = null;
      await running;
    },
  };
}

/** A context for a service outside a worker (tests, scripts). */
export function serviceContext(workerId: string, name: string): ServiceContext {
  const log = logger.child({ workerId, service: name });
  return { workerId, log: (line, level = "info") => log[level](`[${name}] ${line}`) };
}
