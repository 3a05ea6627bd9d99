/**
 * One LISTEN connection per process, fanned out to every subscriber in it.
 * Job writes notify in their own transaction (a trigger on `jobs`), so an
 * event is seen only once its change is committed.
 */
import pg from "pg";
import { databaseUrl } from "../env";

export const JOB_EVENTS_CHANNEL = "conveyor_job_events";

export type JobEvent = {
  tenantId: string;
  jobId: string;
  seq: number;
  type: string;
  status: string;
  attempts: number;
  done: number;
  total: number | null;
  unit: string | null;
  stage: string | null;
  message: string | null;
  /** A cancel was requested while the job runs. */
  cancelRequested?: boolean;
  at: string;
};

type Listener = (event: JobEvent) => void;
type Filter = { tenantId?: string | null; jobId?: string };

class JobEventHub {
  private client: pg.Client | null = null;
  private connecting: Promise<void> | null = null;
  private readonly listeners = new Map<Listener, Filter>();
  private retryMs = 250;

  /** Subscribes; resolves once the LISTEN is in place, so nothing committed after it is missed. */
  async subscribe(filter: Filter, listener: Listener): Promise<() => void> {
    this.listeners.set(listener, filter);
    try {
      await this.ensureConnected();
    } catch (err) {
      this.listeners.delete(listener);
      throw err;
    }
    return () => {
      this.listeners.delete(listener);
    };
  }

  get subscriberCount(): number {
    return this.listeners.size;
  }

  private ensureConnected(): Promise<void> {
    if (this.client) return Promise.resolve();
    this.connecting ??= this.connect().finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: databaseUrl(), application_name: "conveyor-events" });
    client.on("notification", (msg) => {
      if (msg.channel !== JOB_EVENTS_CHANNEL || !msg.payload) return;
      let event: JobEvent;
      try {
        event = JSON.parse(msg.payload) as JobEvent;
      } catch {
        return;
      }
      for (const [listener, f] of this.listeners) {
        if (f.jobId && f.jobId !== event.jobId) continue;
        if (f.tenantId && f.tenantId !== event.tenantId) continue;
        listener(event);
      }
    });
    const onLost = (err?: Error) => {
      if (this.client !== client) return;
      this.client = null;
      console.error(`[events] LISTEN connection lost${err ? `: ${err.message}` : ""}; reconnecting`);
      client.end().catch(() => {});
      const delay = this.retryMs;
      this.retryMs = Math.min(this.retryMs * 2, 10_000);
      setTimeout(() => {
        if (this.listeners.size > 0) this.ensureConnected().catch(() => {});
      }, delay).unref();
    };
    client.on("error", onLost);
    client.on("end", () => onLost());
    await client.connect();
    await client.query(`LISTEN ${JOB_EVENTS_CHANNEL}`);
    this.client = client;
    this.retryMs = 250;
  }
}

const key = Symbol.for("conveyor.eventHub");
const store = globalThis as unknown as { [key]?: JobEventHub };

/** The process-wide hub. */
export function eventHub(): JobEventHub {
  store[key] ??= new JobEventHub();
  return store[key];
}
