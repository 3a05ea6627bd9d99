/**
 * The process's lease keeper: every running attempt's lease is renewed by one
 * statement per tick for all of them (lib/jobs/sql/heartbeat.sql), not by a
 * timer and a statement per attempt, so a worker holding a thousand attempts
 * that wait on the network sends a few heartbeat statements a second and holds
 * no connection between them.
 *
 * Each attempt keeps its own lease clock (from before its claim was sent, on
 * the monotonic clock; advanced only by a renewal that came back, to the time
 * that renewal was sent): every tick, an attempt whose lease may run out before
 * its next renewal is stopped (lease lost), whatever the database answers or
 * fails to. A stalled event loop runs no tick: when it wakes, the first tick
 * finds the leases past their time and stops those attempts before anything
 * else of theirs runs further than its next await — as a per-attempt timer did.
 */
import type { SqlClient } from "../db";
import { heartbeatJobs, type LeaseRenewal } from "./sql/heartbeat";

export type KeptLease = {
  /** Whether the lease may run out before the next renewal (the attempt must stop). */
  expiring(): boolean;
  /** Stops renewing (the attempt ended). */
  release(): void;
};

type Entry = LeaseRenewal & {
  /** performance.now() until which the lease is known to hold. */
  validUntil: number;
  /** Renew every this long (a third of the lease, at least 200 ms). */
  every: number;
  /** When the last renewal was sent. */
  sentAt: number;
  inFlight: boolean;
  onLost: (why: "renewal_failed" | "fenced") => void;
  onCancel: () => void;
  onError: (e: Error) => void;
};

/** The keeper's tick, in ms: an attempt is renewed within this of its due time. */
const TICK_MS = 100;
/** Rows per statement: a batch this size is a few ms of Postgres. */
const MAX_BATCH = 5_000;

export class LeaseKeeper {
  private readonly entries = new Map<string, Entry>();
  private timer: NodeJS.Timeout | null = null;
  /** Statements sent (tests and the bench read it: one per tick, not one per attempt). */
  statements = 0;

  constructor(private readonly client: () => SqlClient) {}

  /** Attempts whose leases it keeps now. */
  get size(): number {
    return this.entries.size;
  }

  keep(opts: {
    jobId: string;
    token: bigint;
    leaseMs: number;
    /** performance.now() just before the claim was sent. */
    claimedAt: number;
    onLost: Entry["onLost"];
    onCancel: () => void;
    onError: (e: Error) => void;
  }): KeptLease {
    const every = Math.max(200, Math.floor(opts.leaseMs / 3));
    const entry: Entry = {
      jobId: opts.jobId,
      token: opts.token,
      leaseMs: opts.leaseMs,
      validUntil: opts.claimedAt + opts.leaseMs,
      every,
      sentAt: opts.claimedAt,
      inFlight: false,
      onLost: opts.onLost,
      onCancel: opts.onCancel,
      onError: opts.onError,
    };
    this.entries.set(opts.jobId, entry);
    this.timer ??= setInterval(() => this.tick(), TICK_MS);
    return {
      expiring: () => expiring(entry, performance.now()),
      release: () => {
        if (this.entries.get(entry.jobId) === entry) this.entries.delete(entry.jobId);
        if (!this.entries.size && this.timer) {
          clearInterval(this.timer);
          this.timer = null;
        }
      },
    };
  }

  /** One tick: stop the attempts whose lease may run out, renew those due (early ones with them). */
  tick(): void {
    const now = performance.now();
    const due: Entry[] = [];
    for (const e of this.entries.values()) {
      if (expiring(e, now)) {
        this.entries.delete(e.jobId);
        e.onLost("renewal_failed");
        continue;
      }
      // Due, or due within a quarter of an interval: renewed early, attempts claimed apart come to
      // share their ticks.
      if (!e.inFlight && now - e.sentAt >= e.every * 0.75) due.push(e);
    }
    for (let i = 0; i < due.length; i += MAX_BATCH) this.renew(due.slice(i, i + MAX_BATCH), now);
  }

  private renew(batch: Entry[], sentAt: number): void {
    for (const e of batch) {
      e.inFlight = true;
      e.sentAt = sentAt;
    }
    this.statements++;
    heartbeatJobs(this.client(), batch)
      .then((held) => {
        for (const e of batch) {
          e.inFlight = false;
          if (this.entries.get(e.jobId) !== e) continue; // ended meanwhile
          const beat = held.get(e.jobId);
          if (!beat) {
            this.entries.delete(e.jobId);
            e.onLost("fenced");
            continue;
          }
          e.validUntil = sentAt + e.leaseMs;
          if (beat.cancelRequested) e.onCancel();
        }
      })
      .catch((err: Error) => {
        for (const e of batch) {
          e.inFlight = false;
          if (this.entries.get(e.jobId) === e) e.onError(err);
        }
      });
  }
}

/** The lease may run out before the next renewal could come back. */
function expiring(e: Entry, now: number): boolean {
  return now > e.validUntil - e.every / 2;
}
