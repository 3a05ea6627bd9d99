/**
 * Runs a process's services: starts them in order (each with its own context:
 * its log lines read `[name] …` and carry the worker id), stops them in reverse.
 * Log policy: one info line per start, one per stop that took long; a failed
 * start stops what already started and throws; a failed stop is logged and the
 * others still stop.
 */
import type { Logger } from "../log";
import type { Service, ServiceContext } from "./service";

/** A stop that takes longer than this is worth a line. */
const SLOW_STOP_MS = 1_000;

export class ServiceRunner {
  private readonly started: Service[] = [];

  constructor(
    private readonly services: readonly Service[],
    private readonly opts: { workerId: string; log: Logger },
  ) {}

  private contextFor(service: Service): ServiceContext {
    const log = this.opts.log.child({ service: service.name });
    return { workerId: this.opts.workerId, log: (line, level = "info") => log[level](`[${service.name}] ${line}`) };
  }

  /** Starts every service in order; on a failure, stops those started (in reverse) and throws. */
  async start(): Promise<void> {
    const names = new Set<string>();
    for (const s of this.services) {
      if (names.has(s.name)) throw new Error(`two services are named ${s.name}`);
      names.add(s.name);
    }
    for (const service of this.services) {
      try {
        await service.start(this.contextFor(service));
      } catch (e) {
        this.opts.log.error({ err: e }, `[${service.name}] failed to start: ${(e as Error).message}`);
        await this.stop();
        throw e;
      }
      this.started.push(service);
    }
    this.opts.log.debug(`[runtime] started ${this.services.map((s) => s.name).join(", ")}`);
  }

  /** Stops the started services in reverse order; each stop's failure is logged, never thrown. */
  async stop(): Promise<void> {
    while (this.started.length) {
      const service = this.started.pop()!;
      const t0 = Date.now();
      try {
        await service.stop();
      } catch (e) {
        this.opts.log.error({ err: e }, `[${service.name}] failed to stop: ${(e as Error).message}`);
      }
      const ms = Date.now() - t0;
      if (ms > SLOW_STOP_MS) this.opts.log.info(`[${service.name}] stopped in ${ms} ms`);
    }
  }
}
