/**
 * tus's lock on an upload, held in Postgres so it serialises an upload's
 * requests across every app process (tus's own MemoryLocker holds for one).
 *
 * A lock is a lease row in `upload_locks`: taken when free or expired, renewed
 * by its holder every RENEW_MS while the request works, deleted on unlock. A
 * request that finds the upload locked asks the holder to let go, as tus
 * expects (a client resuming after a dropped connection must not wait for the
 * old, half-open request): at once when the holder is in this process, else
 * through `release_requested_at`, which the holder sees at its next renewal.
 * A process that dies holding a lock leaves a lease that expires in LEASE_MS.
 *
 * A waiter does not poll: an unlock notifies (`conveyor_upload_locks`, the
 * upload's id, through the process's one LISTEN connection) and the waiter
 * tries again then; otherwise it wakes when the holder's lease would expire
 * or, at the latest, after RENEW_MS, to ask a changed holder to let go.
 */
import { randomUUID } from "node:crypto";
import { ERRORS, type Lock, type Locker, type RequestRelease } from "@tus/server";
import { pool } from "../db";
import { run } from "../sql";
import * as sql from "./sql/statements";
import { logger } from "../log";
import { notifier } from "../runtime/notifier";

/** An unlock's notification: its payload is the upload's id. */
export const UPLOAD_LOCKS_CHANNEL = "conveyor_upload_locks";

/** A lease not renewed for this long is free (its holder died), in ms. */
const LEASE_MS = 10_000;
/** How often a holder renews its lease and looks for a request to let go, in ms. */
const RENEW_MS = 1_000;
/** How often a waiter tries again if it cannot be told of an unlock (no LISTEN connection), in ms. */
const POLL_MS = 50;
/** How long a request waits for the lock before tus answers it 423 (as tus's MemoryLocker), in ms. */
const ACQUIRE_TIMEOUT_MS = 30_000;

type Held = Map<string, { holder: string; requestRelease: RequestRelease }>;

/** One per process (the tus server's): its held locks are asked to let go directly. */
export class PostgresLocker implements Locker {
  /** The locks this process holds: a waiter here asks a holder here directly. */
  private readonly held: Held = new Map();

  constructor(private readonly opts: { leaseMs?: number; renewMs?: number; acquireTimeoutMs?: number } = {}) {}

  newLock(id: string): Lock {
    return new PostgresLock(id, this.held, {
      leaseMs: this.opts.leaseMs ?? LEASE_MS,
      renewMs: this.opts.renewMs ?? RENEW_MS,
      acquireTimeoutMs: this.opts.acquireTimeoutMs ?? ACQUIRE_TIMEOUT_MS,
    });
  }
}

class PostgresLock implements Lock {
  private readonly holder = randomUUID();
  private renewTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly id: string,
    private readonly heldHere: Held,
    private readonly opts: { leaseMs: number; renewMs: number; acquireTimeoutMs: number },
  ) {}

  async lock(signal: AbortSignal, requestRelease: RequestRelease): Promise<void> {
    const deadline = Date.now() + this.opts.acquireTimeoutMs;
    // Listening before the first try: an unlock between a failed try and the wait is not missed.
    let notified: boolean;
    let wake: (() => void) | null = null;
    const unlisten = await notifier()
      .subscribe(UPLOAD_LOCKS_CHANNEL, (id) => {
        if (id !== this.id) return;
        notified = true;
        wake?.();
      })
      .catch((err: Error) => {
        logger.warn({ err }, `[uploads] no LISTEN for lock releases (${err.message}): polling every ${POLL_MS} ms`);
        return null;
      });
    try {
      let askAt = 0;
      for (;;) {
        notified = false;
        const leftMs = await this.tryTake();
        if (leftMs === null) break;
        if (Date.now() >= askAt) {
          // Ask the holder to finish up: directly when it is in this process, else through its row
          // (again every renewal period: the holder may have changed meanwhile).
          askAt = Date.now() + this.opts.renewMs;
          await run(pool(), sql.askRelease, [this.id]);
          await this.heldHere.get(this.id)?.requestRelease();
        }
        if (signal.aborted || Date.now() > deadline) throw ERRORS.ERR_LOCK_TIMEOUT;
        if (notified) continue;
        // Until the unlock's notification, the holder's lease runs out, the time to ask again, or the deadline.
        const waitMs = unlisten
          ? Math.max(0, Math.min(leftMs + 5, askAt - Date.now(), deadline - Date.now() + 1))
          : POLL_MS;
        await new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            signal.removeEventListener("abort", done);
            wake = null;
            resolve();
          };
          const timer = setTimeout(done, waitMs);
          signal.addEventListener("abort", done);
          wake = done;
        });
      }
    } finally {
      unlisten?.();
    }
    this.heldHere.set(this.id, { holder: this.holder, requestRelease });
    let releaseAsked = false;
    this.renewTimer = setInterval(() => {
      run(pool(), sql.renewLock, [this.id, this.holder, this.opts.leaseMs / 1000])
        .then(async ({ rows }) => {
          if (rows[0]?.asked && !releaseAsked) {
            releaseAsked = true;
            await requestRelease();
          }
        })
        .catch((err: Error) => logger.error({ err }, `[uploads] renewing the lock of ${this.id}`));
    }, this.opts.renewMs);
    this.renewTimer.unref();
  }

  /**
   * Takes the lock when it is free or its lease expired: null when taken, else how long the
   * holder's lease has left, in ms (the subquery reads the row as it was before this statement).
   */
  private async tryTake(): Promise<number | null> {
    const { rows } = await run(pool(), sql.takeLock, [this.id, this.holder, this.opts.leaseMs / 1000]);
    const r = rows[0]!;
    return r.taken ? null : Math.max(0, r.leftMs ?? 0);
  }

  async unlock(): Promise<void> {
    if (this.renewTimer) clearInterval(this.renewTimer);
    this.renewTimer = null;
    if (this.heldHere.get(this.id)?.holder === this.holder) this.heldHere.delete(this.id);
    // The delete and its notification in one statement: a waiter (in any process) tries again at once.
    await run(pool(), sql.unlock, [this.id, this.holder]);
  }
}
