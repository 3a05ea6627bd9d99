/**
 * The worker's registration and heartbeat, as a service: it registers the
 * process in the worker registry at start, records every WORKER_HEARTBEAT_MS
 * that it is alive (with graphile's worker ids, so the reaper can release their
 * locks if it dies), and marks it stopped at the end. Declared dead by the fleet
 * (paused past WORKER_DEAD_AFTER_MS: its jobs were handed to others, its attempts
 * fenced off), it exits with code 3 so that it is restarted as a new worker.
 */
import { env } from "@/lib/env";
import { heartbeatWorker, markWorkerStopped, registerWorker, type WorkerRegistration } from "@/lib/jobs/workers";
import type { Service, ServiceContext } from "@/lib/runtime/service";

export class Heartbeat implements Service {
  readonly name = "heartbeat";
  /** graphile's own worker and pool ids (worker/graphile.ts records them). */
  readonly graphileIds = new Set<string>();
  private state: "running" | "stopping" = "running";
  private timer: NodeJS.Timeout | null = null;
  private log: ServiceContext["log"] = () => {};

  constructor(private readonly registration: WorkerRegistration) {}

  async start(ctx: ServiceContext): Promise<void> {
    this.log = ctx.log;
    await registerWorker(this.registration);
    this.timer = setInterval(() => this.beatNow(), env().WORKER_HEARTBEAT_MS);
  }

  /** Records that this process is alive now; exits (3) when the fleet declared it dead. */
  async beat(): Promise<void> {
    const alive = await heartbeatWorker(this.registration.id, [...this.graphileIds], this.state);
    if (!alive) {
      this.log(`${this.registration.id} was declared dead by the fleet; exiting so it can be restarted`, "error");
      process.exit(3);
    }
  }

  /** A beat in the background (its failure is a warning: the next one may get through). */
  beatNow(): void {
    void this.beat().catch((e: Error) => this.log(`failed: ${e.message}`, "warn"));
  }

  /** The worker is stopping: its next beats say so (the console shows it). */
  stopping(): void {
    this.state = "stopping";
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await markWorkerStopped(this.registration.id);
  }
}
