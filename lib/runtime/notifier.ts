/**
 * The process's one LISTEN connection of ours (graphile-worker keeps its own).
 * Every part of a process that waits on a Postgres notification subscribes
 * here: the job-events hub (lib/events: SSE, the attempt guard), the admitter,
 * the scheduler, the uploads' locks, a loop's wake-ups (lib/runtime/service.ts).
 *
 *  - `subscribe(channel, fn)` resolves once the LISTEN is in place: a
 *    notification committed after that is delivered while connected.
 *  - The connection is checked every KEEPALIVE_MS with a no-op round trip (a
 *    LISTEN again of a channel it listens on: pg_stat_activity keeps showing a
 *    LISTEN), and TCP keep-alive is on: a dead connection is noticed, not
 *    waited on for ever.
 *  - On loss it reconnects with a backoff (250 ms doubling to 10 s), LISTENs
 *    again on every channel, and calls each subscription's `onLost` (at once)
 *    and `onReconnected` (once back): notifications sent meanwhile are gone, so
 *    a subscriber re-checks what it may have missed.
 *  - One log policy: one warning when the connection is lost (or cannot be
 *    made), one info line when it is back; failed attempts between are quiet.
 *
 * It connects to DATABASE_DIRECT_URL: LISTEN needs a session of its own, never
 * a transaction-pooling PgBouncer's (docs/DEPLOY.md).
 */
import pg from "pg";
import { directDatabaseUrl } from "../env";
import { logger } from "../log";

/** A Postgres channel name we use: unquoted, lower case. */
const CHANNEL_NAME = /^[a-z_][a-z0-9_]*$/;
const FIRST_RETRY_MS = 250;
const MAX_RETRY_MS = 10_000;
const KEEPALIVE_MS = 10_000;
/** A keep-alive round trip not answered within this long means the connection is dead. */
const KEEPALIVE_TIMEOUT_MS = 5_000;

export type SubscribeOptions = {
  /** The connection was lost: notifications may be missed until `onReconnected`. */
  onLost?: () => void;
  /** The LISTEN is in place again after a loss: re-check what may have been missed. */
  onReconnected?: () => void;
  /**
   * When the connection cannot be made now: `reject` (default) drops the subscription and
   * rejects; `retry` keeps it, resolves (the caller carries on without notifications, e.g.
   * on its sweep), and `onReconnected` is called once the LISTEN is in place.
   */
  whenDown?: "reject" | "retry";
};

type Subscription = { fn: (payload: string) => void; opts: SubscribeOptions };

export type NotifierOptions = {
  /** pg_stat_activity's application_name of the connection (default `conveyor-listen:<pid>`). */
  applicationName?: string;
  keepAliveMs?: number;
  keepAliveTimeoutMs?: number;
  /** Where the warning and info lines go (default: the process's log). */
  log?: (line: string, level: "info" | "warn") => void;
};

export class Notifier {
  private client: pg.Client | null = null;
  /** The channels the current connection LISTENs on. */
  private listening = new Set<string>();
  private connecting: Promise<void> | null = null;
  private readonly channels = new Map<string, Set<Subscription>>();
  private retryMs = FIRST_RETRY_MS;
  private retryTimer: NodeJS.Timeout | null = null;
  private keepAliveTimer: NodeJS.Timeout | null = null;
  /** Since when the connection is down (after a loss or a failed first connect); null while up. */
  private downSince: number | null = null;
  private attempts = 0;
  private closed = false;
  private readonly log: (line: string, level: "info" | "warn") => void;

  constructor(private readonly opts: NotifierOptions = {}) {
    this.log = opts.log ?? ((line, level) => logger[level](line));
  }

  /** Whether the LISTEN connection is up. */
  get connected(): boolean {
    return this.client !== null;
  }

  /** The backend pid of the connection (tests: pg_terminate_backend), or null while down. */
  get backendPid(): number | null {
    return (this.client as unknown as { processID?: number } | null)?.processID ?? null;
  }

  /**
   * Calls `fn` with each notification's payload on `channel`; resolves, with the function that
   * unsubscribes, once the LISTEN is in place (see SubscribeOptions.whenDown when it cannot be).
   */
  async subscribe(channel: string, fn: (payload: string) => void, opts: SubscribeOptions = {}): Promise<() => void> {
    if (!CHANNEL_NAME.test(channel)) throw new Error(`not a channel name: ${channel}`);
    this.closed = false;
    const sub: Subscription = { fn, opts };
    let set = this.channels.get(channel);
    if (!set) this.channels.set(channel, (set = new Set()));
    set.add(sub);
    let done = false;
    const unsubscribe = () => {
      if (done) return;
      done = true;
      const s = this.channels.get(channel);
      if (!s?.delete(sub) || s.size) return;
      this.channels.delete(channel);
      if (this.client && this.listening.delete(channel)) this.client.query(`UNLISTEN ${channel}`).catch(() => {});
    };
    try {
      await this.ensureConnected();
      // A connection made before this channel was added LISTENs on it now (twice does nothing).
      const client = this.client;
      if (client && !this.listening.has(channel) && this.channels.has(channel)) {
        await client.query(`LISTEN ${channel}`);
        this.listening.add(channel);
      }
    } catch (err) {
      if (opts.whenDown === "retry" && !this.closed) {
        this.scheduleReconnect();
        return unsubscribe;
      }
      unsubscribe();
      throw err;
    }
    return unsubscribe;
  }

  /**
   * Resolves once the connection is up with every subscribed channel LISTENed on; rejects when
   * it cannot be made now (a subscriber that must not miss a notification, e.g. an SSE stream
   * about to read its snapshot, waits on it rather than on its subscription alone).
   */
  ready(): Promise<void> {
    return this.ensureConnected();
  }

  /** Ends the connection and forgets every subscription (a process's shutdown, tests). */
  async close(): Promise<void> {
    this.closed = true;
    this.channels.clear();
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.stopKeepAlive();
    const client = this.client;
    this.client = null;
    this.listening = new Set();
    await client?.end().catch(() => {});
  }

  private get subscribed(): boolean {
    return this.channels.size > 0;
  }

  private ensureConnected(): Promise<void> {
    if (this.client) return Promise.resolve();
    this.connecting ??= this.connect().finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  private scheduleReconnect(): void {
    if (this.retryTimer || this.closed || !this.subscribed || this.client) return;
    const delay = this.retryMs;
    this.retryMs = Math.min(this.retryMs * 2, MAX_RETRY_MS);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      if (this.closed || !this.subscribed) return;
      // A failure is quiet (the loss was logged once); connect() schedules the next try.
      this.ensureConnected().catch(() => {});
    }, delay);
    this.retryTimer.unref();
  }

  private wentDown(err: Error | undefined, what: string): void {
    if (this.downSince !== null) return;
    this.downSince = Date.now();
    this.attempts = 0;
    const channels = [...this.channels.keys()].join(", ");
    this.log(
      `[notifier] LISTEN connection ${what}${err ? `: ${err.message}` : ""}; reconnecting (channels: ${channels || "none"})`,
      "warn",
    );
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({
      connectionString: directDatabaseUrl(),
      application_name: this.opts.applicationName ?? `conveyor-listen:${process.pid}`,
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
    });
    client.on("notification", (msg) => {
      for (const sub of this.channels.get(msg.channel) ?? []) {
        try {
          sub.fn(msg.payload ?? "");
        } catch (e) {
          logger.error({ err: e }, `[notifier] a subscriber of ${msg.channel} threw: ${(e as Error).message}`);
        }
      }
    });
    let lost = false;
    const onLost = (err?: Error) => {
      if (lost) return;
      lost = true;
      client.end().catch(() => {});
      if (this.client !== client) return;
      this.client = null;
      this.listening = new Set();
      this.stopKeepAlive();
      if (this.closed || !this.subscribed) return;
      this.wentDown(err, "lost");
      for (const set of this.channels.values()) for (const sub of set) sub.opts.onLost?.();
      this.scheduleReconnect();
    };
    client.on("error", onLost);
    client.on("end", () => onLost());
    const listening = new Set<string>();
    try {
      this.attempts++;
      await client.connect();
      for (const channel of this.channels.keys()) {
        await client.query(`LISTEN ${channel}`);
        listening.add(channel);
      }
    } catch (err) {
      lost = true;
      client.end().catch(() => {});
      if (!this.closed && this.subscribed) {
        this.wentDown(err as Error, "could not be made");
        this.scheduleReconnect();
      }
      throw err;
    }
    if (this.closed) {
      lost = true;
      await client.end().catch(() => {});
      return;
    }
    this.client = client;
    this.listening = listening;
    this.retryMs = FIRST_RETRY_MS;
    this.startKeepAlive(client);
    if (this.downSince !== null) {
      const ms = Date.now() - this.downSince;
      this.log(`[notifier] LISTEN connection back after ${ms} ms (${this.attempts} attempt(s))`, "info");
      this.downSince = null;
      for (const set of this.channels.values()) for (const sub of [...set]) sub.opts.onReconnected?.();
    }
  }

  private startKeepAlive(client: pg.Client): void {
    this.stopKeepAlive();
    const every = this.opts.keepAliveMs ?? KEEPALIVE_MS;
    const timeoutMs = this.opts.keepAliveTimeoutMs ?? KEEPALIVE_TIMEOUT_MS;
    this.keepAliveTimer = setInterval(() => {
      if (this.client !== client) return;
      // A LISTEN again of a channel it listens on: a round trip that changes nothing.
      const channel = this.listening.values().next().value;
      const timer = setTimeout(() => {
        // No answer: the connection is dead (a half-open socket). Destroying it ends it.
        (client as unknown as { connection?: { stream?: { destroy(e?: Error): void } } }).connection?.stream?.destroy(
          new Error(`no answer to the keep-alive within ${timeoutMs} ms`),
        );
      }, timeoutMs);
      client
        .query(channel ? `LISTEN ${channel}` : "SELECT 1")
        .catch(() => {}) // a failure ends the connection: its "error"/"end" handles it
        .finally(() => clearTimeout(timer));
    }, every);
    this.keepAliveTimer.unref();
  }

  private stopKeepAlive(): void {
    if (this.keepAliveTimer) clearInterval(this.keepAliveTimer);
    this.keepAliveTimer = null;
  }
}

// On globalThis: Next.js may evaluate this module in more than one bundle of one process.
const key = Symbol.for("conveyor.notifier");
const store = globalThis as unknown as { [key]?: Notifier };

/** The process-wide notifier: its one LISTEN connection of ours. */
export function notifier(): Notifier {
  store[key] ??= new Notifier();
  return store[key];
}
