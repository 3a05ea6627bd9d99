/**
 * The downstream guard: what any task calling something outside (a webhook
 * endpoint, an API) uses to be a good client, fleet-wide. Per key, a token
 * bucket, a concurrency limit (fixed, or adapting to the downstream's latency:
 * `slowMs`), Retry-After, and a circuit breaker, all state in Postgres (see the
 * webhooks and adaptive_endpoint_limits migrations: conveyor_downstream_acquire/_release).
 *
 * A task asks through its context: `const permit = await ctx.downstream(key, limits)`,
 * calls, then `permit.release(outcome)`. When the downstream may not be called
 * now, `ctx.downstream` throws a DeferredError: the engine puts the job back
 * without spending an attempt, until a time, or parked until a finished call
 * (or the sweep) wakes it.
 */
import { pool, type SqlClient } from "../db";

export type DownstreamLimits = {
  /** Calls per second (token bucket refill). */
  ratePerSecond: number;
  /** Calls that may start at once after a quiet spell (bucket size); default: ratePerSecond. */
  burst?: number;
  /** Calls in flight at once (with `slowMs`: at most; the limit in force adapts under it). */
  concurrency: number;
  /**
   * Adapt the in-flight limit to the downstream's latency (AIMD): it starts at 2, each call
   * answered within `slowMs` adds one (up to `concurrency`), a slower one, or a call still
   * unanswered after `slowMs`, halves it (at least 1, once per round trip). A downstream that
   * answers fast is never held back below `concurrency`; a slow one holds one slot. Unset: the
   * limit is `concurrency`, fixed.
   */
  slowMs?: number;
  /** A permit not released by then is freed (its holder crashed), in ms. */
  holdMs: number;
  breaker?: Partial<BreakerPolicy>;
};

export type BreakerPolicy = {
  /** Consecutive failures that open the circuit. */
  failures: number;
  /** Failure share over the window that opens it… */
  failureRate: number;
  /** …once the window has at least this many calls. */
  minAttempts: number;
  windowMs: number;
  /** How long the circuit stays open before one probe is let through. */
  openMs: number;
};

export const DEFAULT_BREAKER: BreakerPolicy = {
  failures: 5,
  failureRate: 0.5,
  minAttempts: 10,
  windowMs: 60_000,
  openMs: 30_000,
};

/** How a call went: `neutral` says nothing about the downstream's health (it asked us to slow down). */
export type CallOutcome = "success" | "failure" | "neutral";

export type DeferReason = "retry_after" | "circuit_open" | "circuit_half_open" | "concurrency" | "rate_limit";

/** A parked job is looked at again after this long even if nothing woke it (the sweep wakes it sooner). */
export const PARK_BACKSTOP_MS = 600_000;

/**
 * The downstream may not be called now. Thrown out of a handler, the engine
 * puts the job back (status `retrying`) without spending an attempt: until
 * `waitMs`, or parked (`waitMs` null) until woken.
 */
export class DeferredError extends Error {
  readonly errorClass = "deferred" as const;
  constructor(
    readonly key: string,
    readonly reason: DeferReason,
    readonly waitMs: number | null,
  ) {
    super(
      `${key}: ${REASONS[reason]}; ${waitMs === null ? "waiting for a turn" : `trying again in ${Math.ceil(waitMs)} ms`}`,
    );
    this.name = "DeferredError";
  }
  /** When to look at the job again. */
  get delayMs(): number {
    return this.waitMs ?? PARK_BACKSTOP_MS;
  }
}

const REASONS: Record<DeferReason, string> = {
  retry_after: "the downstream asked us to wait (Retry-After)",
  circuit_open: "circuit open",
  circuit_half_open: "circuit half-open, a probe is in flight",
  concurrency: "as many calls in flight as allowed",
  rate_limit: "rate limit reached",
};

export type Permit = {
  /** Frees the slot and feeds the breaker; `retryAfterMs` holds every caller of the key back that long. */
  release(outcome: CallOutcome, retryAfterMs?: number): Promise<CircuitState>;
};

export type CircuitState = "closed" | "open" | "half_open";

/** Asks for a permit for `holder` (a job id) to call `key`; throws DeferredError when refused. */
export async function acquire(key: string, holder: string, limits: DownstreamLimits, client: SqlClient = pool()) {
  const rate = Math.max(0.001, limits.ratePerSecond);
  const burst = Math.max(1, limits.burst ?? limits.ratePerSecond);
  const slowMs = limits.slowMs === undefined ? null : Math.max(1, Math.round(limits.slowMs));
  const { rows } = await client.query<{ granted: boolean; wait_ms: number | null; reason: DeferReason | null }>(
    "SELECT * FROM conveyor_downstream_acquire($1, $2, $3, $4, $5, $6, $7)",
    [key, holder, rate, burst, Math.max(1, limits.concurrency), Math.max(1, Math.round(limits.holdMs)), slowMs],
  );
  const row = rows[0]!;
  if (!row.granted) throw new DeferredError(key, row.reason!, row.wait_ms);
  const breaker = { ...DEFAULT_BREAKER, ...limits.breaker };
  let released = false;
  const permit: Permit = {
    async release(outcome, retryAfterMs = 0) {
      if (released) return "closed";
      released = true;
      return release(key, holder, outcome, retryAfterMs, breaker, slowMs, client);
    },
  };
  return permit;
}

async function release(
  key: string,
  holder: string,
  outcome: CallOutcome,
  retryAfterMs: number,
  b: BreakerPolicy,
  slowMs: number | null,
  client: SqlClient,
): Promise<CircuitState> {
  const { rows } = await client.query<{ state: CircuitState }>(
    "SELECT conveyor_downstream_release($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) AS state",
    [
      key,
      holder,
      outcome,
      Math.max(0, Math.round(retryAfterMs)),
      b.failures,
      b.failureRate,
      b.minAttempts,
      b.windowMs,
      b.openMs,
      slowMs,
    ],
  );
  return rows[0]!.state;
}

export type DownstreamState = {
  key: string;
  circuit: CircuitState;
  openedAt: Date | null;
  retryAt: Date | null;
  blockedUntil: Date | null;
  consecutiveFailures: number;
  failingSince: Date | null;
  lastSuccessAt: Date | null;
  lastFailureAt: Date | null;
  inFlight: number;
  /** Calls allowed in flight now (the adaptive limit, when the caller asks for one). */
  limit: number;
  waiting: number;
};

/** The guard's state of some keys (for pages: circuit, in flight, parked). */
export async function downstreamStates(
  keys: string[],
  client: SqlClient = pool(),
): Promise<Map<string, DownstreamState>> {
  if (keys.length === 0) return new Map();
  const { rows } = await client.query<DownstreamState>(
    `SELECT d.key, d.circuit, d.opened_at AS "openedAt", d.retry_at AS "retryAt", d.blocked_until AS "blockedUntil",
            d.consecutive_failures AS "consecutiveFailures", d.failing_since AS "failingSince",
            d.last_success_at AS "lastSuccessAt", d.last_failure_at AS "lastFailureAt",
            conveyor_downstream_busy(d.key) AS "inFlight",
            conveyor_downstream_limit(d) AS "limit",
            (SELECT count(*)::int FROM downstream_waiters w WHERE w.key = d.key) AS "waiting"
       FROM downstreams d WHERE d.key = ANY($1::text[])`,
    [keys],
  );
  return new Map(rows.map((r) => [r.key, r]));
}

/**
 * Wakes parked jobs a lost wake-up left behind: for each key with waiters, as
 * many as it has free slots (under its limit in force) when nothing holds it back; one when it is held
 * (Retry-After, open circuit) but the job named to go first is gone. Cheap
 * when nobody waits.
 */
export async function sweepWaiters(client: SqlClient = pool()): Promise<number> {
  const { rows } = await client.query<{ n: number }>(
    `SELECT coalesce(sum(conveyor_downstream_wake(d.key,
              CASE WHEN d.circuit = 'closed' AND coalesce(d.blocked_until, now()) <= now()
                   THEN conveyor_downstream_limit(d) - conveyor_downstream_busy(d.key)
                   WHEN d.probe_holder IS NULL OR NOT EXISTS (
                          SELECT 1 FROM jobs j WHERE j.id = d.probe_holder AND j.status IN ('queued', 'retrying', 'running'))
                   THEN 1 ELSE 0 END,
              now())), 0)::int AS n
       FROM downstreams d
      WHERE EXISTS (SELECT 1 FROM downstream_waiters w WHERE w.key = d.key)`,
  );
  return rows[0]?.n ?? 0;
}

/** Forgets a key (its downstream is gone: a deleted endpoint). */
export async function forgetDownstream(key: string, client: SqlClient = pool()): Promise<void> {
  await client.query("DELETE FROM downstream_waiters WHERE key = $1", [key]);
  await client.query("DELETE FROM downstream_slots WHERE key = $1", [key]);
  await client.query("DELETE FROM downstreams WHERE key = $1", [key]);
}
