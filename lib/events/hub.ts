/**
 * Job events, fanned out to every subscriber in the process: the hub is one
 * subscriber of the process's notifier (lib/runtime/notifier.ts, its one LISTEN
 * connection of ours), and indexes its own listeners by job and tenant.
 * Job writes notify in their own transaction (a trigger on `jobs`), so an
 * event is seen only once its change is committed.
 */
import { notifier } from "../runtime/notifier";
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

class JobEventHub {
  private readonly listeners = new Map<Listener, Subscription>();
  private readonly index = new ListenerIndex();
  /** The hub's one subscription to the notifier, made with the first listener and kept. */
  private subscribed: Promise<unknown> | null = null;
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
      await this.ensureSubscribed();
      // Subscribed earlier but the connection is down now: wait for it (or fail) as a first subscriber does.
      if (!notifier().connected) await notifier().ready();
    } catch (err) {
      unsubscribe();
      throw err;
    }
    return unsubscribe;
  }

  /** The process's notifier delivers the job-events channel here (one LISTEN connection per process). */
  private ensureSubscribed(): Promise<unknown> {
    this.subscribed ??= notifier()
      .subscribe(JOB_EVENTS_CHANNEL, (payload) => this.onNotification(payload), {
        // Whatever happens while disconnected is unknown: let subscribers resync.
        onLost: () => {
          for (const { onReset } of [...this.listeners.values()]) onReset?.();
        },
      })
      .catch((err: unknown) => {
        this.subscribed = null;
        throw err;
      });
    return this.subscribed;
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

  private onNotification(payload: string): void {
    if (!payload) return;
    // Most events concern a job nobody in this process follows (a worker follows only the jobs
    // it runs): those are dropped before the JSON is parsed and checked.
    const head = HEAD.exec(payload);
    if (head && !this.index.wants(head[1]!, head[2]!)) return;
    const parsed = parseJobEvent(payload);
    if (!parsed.ok) return logger.warn(`[events] bad notification dropped: ${parsed.error}`);
    if (this.held) this.held.push(parsed.event);
    else if (afterFanOut(() => this.dispatchHeld())) this.held = [parsed.event];
    else this.dispatch(parsed.event);
  }
}

const key = Symbol.for("conveyor.eventHub");
const store = globalThis as unknown as { [key]?: JobEventHub };

/** The process-wide hub. */
export function eventHub(): JobEventHub {
  store[key] ??= new JobEventHub();
  return store[key];
}
