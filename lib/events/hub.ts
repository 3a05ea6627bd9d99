/**
 * One LISTEN connection per process, fanned out to every subscriber in it.
 * Job writes notify in their own transaction (a trigger on `jobs`), so an
 * event is seen only once its change is committed.
 */
import pg from "pg";
import { directDatabaseUrl } from "../env";
import { JOB_EVENTS_CHANNEL, parseJobEvent, type JobEvent } from "./payload";
import { logger } from "../log";

export { JOB_EVENTS_CHANNEL, type JobEvent } from "./payload";

type Listener = (event: JobEvent) => void;
type Filter = { tenantId?: string | null; jobId?: string };
type Subscription = { filter: Filter; onReset?: () => void };

class JobEventHub {
  private client: pg.Client | null = null;
  private connecting: Promise<void> | null = null;
  private readonly listeners = new Map<Listener, Subscription>();
  private retryMs = 250;
  private retryTimer: NodeJS.Timeout | null = null;

  /**
   * Subscribes; resolves once the LISTEN is in place, so nothing committed
   * after it is missed. `onReset` is called if the connection is lost: events
   * may have been missed, so the subscriber should start over from a snapshot.
   */
  async subscribe(filter: Filter, listener: Listener, onReset?: () => void): Promise<() => void> {
    this.listeners.set(listener, { filter, onReset });
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

  private ensureConnected(): Promise<void> {
    if (this.client) return Promise.resolve();
    this.connecting ??= this.connect().finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  private scheduleReconnect(): void {
    if (this.retryTimer || this.listeners.size === 0) return;
    const delay = this.retryMs;
    this.retryMs = Math.min(this.retryMs * 2, 10_000);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      if (this.listeners.size === 0) return;
      this.ensureConnected().catch((e: Error) => {
        logger.warn({ err: e }, `[events] LISTEN reconnect failed: ${e.message}; retrying in ${this.retryMs} ms`);
        this.scheduleReconnect();
      });
    }, delay);
    this.retryTimer.unref();
  }

  private dispatch(event: JobEvent): void {
    for (const [listener, { filter: f }] of this.listeners) {
      if (f.jobId && f.jobId !== event.jobId) continue;
      if (f.tenantId && f.tenantId !== event.tenantId) continue;
      listener(event);
    }
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({
      // LISTEN needs a session of its own: never through a transaction-pooling PgBouncer.
      connectionString: directDatabaseUrl(),
      application_name: "conveyor-events",
      keepAlive: true,
    });
    client.on("notification", (msg) => {
      if (msg.channel !== JOB_EVENTS_CHANNEL || !msg.payload) return;
      const parsed = parseJobEvent(msg.payload);
      if (parsed.ok) this.dispatch(parsed.event);
      else logger.warn(`[events] bad notification dropped: ${parsed.error}`);
    });
    let lost = false;
    const onLost = (err?: Error) => {
      if (lost) return;
      lost = true;
      if (this.client === client) this.client = null;
      client.end().catch(() => {});
      if (this.listeners.size === 0) return;
      logger.warn(`[events] LISTEN connection lost${err ? `: ${err.message}` : ""}; reconnecting`);
      // Whatever happened while disconnected is unknown: let subscribers resync.
      for (const { onReset } of this.listeners.values()) onReset?.();
      this.scheduleReconnect();
    };
    client.on("error", onLost);
    client.on("end", () => onLost());
    try {
      await client.connect();
      await client.query(`LISTEN ${JOB_EVENTS_CHANNEL}`);
    } catch (err) {
      lost = true;
      client.end().catch(() => {});
      throw err;
    }
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
