/**
 * One LISTEN connection per process, fanned out to every subscriber in it.
 * Job writes notify in their own transaction (a trigger on `jobs`), so an
 * event is seen only once its change is committed.
 */
import pg from "pg";
import { directDatabaseUrl } from "../env";
import { afterFanOut } from "./fan-out";
import { JOB_EVENTS_CHANNEL, parseJobEvent, type JobEvent } from "./payload";
import { logger } from "../log";

export { JOB_EVENTS_CHANNEL, type JobEvent } from "./payload";

type Listener = (event: JobEvent) => void;
type Filter = { tenantId?: string | null; jobId?: string };
type Subscription = { filter: Filter; onReset?: () => void };

/**
 * The ids at the head of a payload as the trigger writes it (`json_build_object` puts tenantId, then
 * jobId, first): enough to drop an event nobody here follows without parsing it. A payload of
 * another shape is parsed in full, so this decides only what is skipped, never what is delivered.
 */
const HEAD = /^\{"tenantId" : "([^"]*)", "jobId" : "([^"]*)"/;

/** Listeners by what they follow: a job, a tenant, or every event. */
class ListenerIndex {
  readonly byJob = new Map<string, Set<Listener>>();
  readonly byTenant = new Map<string, Set<Listener>>();
  readonly everything = new Set<Listener>();

  private setFor(f: Filter): Set<Listener> | undefined {
    if (f.jobId) return this.byJob.get(f.jobId) ?? this.byJob.set(f.jobId, new Set()).get(f.jobId);
    if (f.tenantId) return this.byTenant.get(f.tenantId) ?? this.byTenant.set(f.tenantId, new Set()).get(f.tenantId);
    return this.everything;
  }

  add(f: Filter, l: Listener): void {
    this.setFor(f)!.add(l);
  }

  remove(f: Filter, l: Listener): void {
    const set = this.setFor(f)!;
    set.delete(l);
    if (set.size === 0 && f.jobId) this.byJob.delete(f.jobId);
    else if (set.size === 0 && f.tenantId) this.byTenant.delete(f.tenantId);
  }

  /** Whether anyone here may want an event of this tenant and job. */
  wants(tenantId: string, jobId: string): boolean {
    return this.everything.size > 0 || this.byJob.has(jobId) || this.byTenant.has(tenantId);
  }
}

/** A channel other than job events another component of this process listens on (lib/uploads' locks). */
const CHANNEL_NAME = /^conveyor_[a-z_]+$/;

class JobEventHub {
  private client: pg.Client | null = null;
  private connecting: Promise<void> | null = null;
  private readonly listeners = new Map<Listener, Subscription>();
  /** Listeners of other channels, by channel: this connection LISTENs on each while it has any. */
  private readonly channels = new Map<string, Set<(payload: string) => void>>();
  private readonly index = new ListenerIndex();
  private retryMs = 250;
  private retryTimer: NodeJS.Timeout | null = null;
  /** Events that came while this process wrote a fan-out, in order (lib/events/fan-out.ts). */
  private held: JobEvent[] | null = null;

  /**
   * Subscribes; resolves once the LISTEN is in place, so nothing committed
   * after it is missed. `onReset` is called if the connection is lost: events
   * may have been missed, so the subscriber should start over from a snapshot.
   */
  async subscribe(filter: Filter, listener: Listener, onReset?: () => void): Promise<() => void> {
    const earlier = this.listeners.get(listener);
    if (earlier) this.index.remove(earlier.filter, listener);
    this.listeners.set(listener, { filter, onReset });
    this.index.add(filter, listener);
    const unsubscribe = () => {
      if (this.listeners.get(listener)?.filter !== filter) return;
      this.listeners.delete(listener);
      this.index.remove(filter, listener);
    };
    try {
      await this.ensureConnected();
    } catch (err) {
      unsubscribe();
      throw err;
    }
    return unsubscribe;
  }

  /**
   * Listens on another channel over this process's one LISTEN connection; resolves once the LISTEN
   * is in place (a notification after it is not missed while connected). One lost while the
   * connection was down is: a listener must not rely on every notification (wait with a timeout).
   */
  async listen(channel: string, listener: (payload: string) => void): Promise<() => void> {
    if (!CHANNEL_NAME.test(channel)) throw new Error(`not a channel name: ${channel}`);
    let set = this.channels.get(channel);
    const first = !set;
    if (!set) this.channels.set(channel, (set = new Set()));
    set.add(listener);
    const unlisten = () => {
      const s = this.channels.get(channel);
      if (!s?.delete(listener) || s.size) return;
      this.channels.delete(channel);
      this.client?.query(`UNLISTEN ${channel}`).catch(() => {});
    };
    try {
      await this.ensureConnected();
      // (A connection made just now may have LISTENed on it already: a second LISTEN does nothing.)
      if (first && this.client) await this.client.query(`LISTEN ${channel}`);
    } catch (err) {
      unlisten();
      throw err;
    }
    return unlisten;
  }

  private get subscribed(): boolean {
    return this.listeners.size > 0 || this.channels.size > 0;
  }

  private ensureConnected(): Promise<void> {
    if (this.client) return Promise.resolve();
    this.connecting ??= this.connect().finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  private scheduleReconnect(): void {
    if (this.retryTimer || !this.subscribed) return;
    const delay = this.retryMs;
    this.retryMs = Math.min(this.retryMs * 2, 10_000);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      if (!this.subscribed) return;
      this.ensureConnected().catch((e: Error) => {
        logger.warn({ err: e }, `[events] LISTEN reconnect failed: ${e.message}; retrying in ${this.retryMs} ms`);
        this.scheduleReconnect();
      });
    }, delay);
    this.retryTimer.unref();
  }

  /** To the listeners of its job (those that also name a tenant: of its tenant too), of its tenant, and of everything. */
  private dispatch(event: JobEvent): void {
    for (const listener of this.index.byJob.get(event.jobId) ?? []) {
      const f = this.listeners.get(listener)?.filter;
      if (f && (!f.tenantId || f.tenantId === event.tenantId)) listener(event);
    }
    for (const listener of this.index.byTenant.get(event.tenantId) ?? []) listener(event);
    for (const listener of this.index.everything) listener(event);
  }

  private dispatchHeld(): void {
    const events = this.held ?? [];
    this.held = null;
    for (const e of events) this.dispatch(e);
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({
      // LISTEN needs a session of its own: never through a transaction-pooling PgBouncer.
      connectionString: directDatabaseUrl(),
      application_name: "conveyor-events",
      keepAlive: true,
    });
    client.on("notification", (msg) => {
      if (msg.channel !== JOB_EVENTS_CHANNEL) {
        for (const l of this.channels.get(msg.channel) ?? []) l(msg.payload ?? "");
        return;
      }
      if (!msg.payload) return;
      // Most events concern a job nobody in this process follows (a worker follows only the jobs
      // it runs): those are dropped before the JSON is parsed and checked.
      const head = HEAD.exec(msg.payload);
      if (head && !this.index.wants(head[1]!, head[2]!)) return;
      const parsed = parseJobEvent(msg.payload);
      if (!parsed.ok) return logger.warn(`[events] bad notification dropped: ${parsed.error}`);
      if (this.held) this.held.push(parsed.event);
      else if (afterFanOut(() => this.dispatchHeld())) this.held = [parsed.event];
      else this.dispatch(parsed.event);
    });
    let lost = false;
    const onLost = (err?: Error) => {
      if (lost) return;
      lost = true;
      if (this.client === client) this.client = null;
      client.end().catch(() => {});
      if (!this.subscribed) return;
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
      for (const channel of this.channels.keys()) await client.query(`LISTEN ${channel}`);
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
