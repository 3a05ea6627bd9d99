/**
 * Where the console's reads go: the read replica (DATABASE_REPLICA_URL) or the primary. The console's
 * lists, overview, charts and health (lib/ops/) and GET /api/metrics read through `withReadDb`;
 * everything else reads the primary through db() and pool(). A read goes to the replica unless:
 *  - no replica is configured;
 *  - its reader wrote within DATABASE_REPLICA_MAX_LAG_MS (read your writes): the route wrapper
 *    (lib/http/route.ts) records an operator's successful write here, for this process, and in a
 *    short-lived cookie for the others (`readPrimaryUntil` on the principal of the next request);
 *  - the probe (lib/replica-probe.ts) has not found it within the bound: further behind than
 *    DATABASE_REPLICA_MAX_LAG_MS, unreachable, not a standby, or not measured yet;
 *  - the read fails there: it is run again on the primary (and a lost connection marks the replica
 *    down until the next probe finds it).
 * The window and the bound are the same setting, which is what makes the rule hold: once the window
 * has passed, a replica within the bound has replayed the write.
 */
import { db, replica, type PrismaClient } from "./db";
import { env } from "./env";
import { AppError } from "./errors";
import { logger } from "./log";
import type { ReplicaReading, ReplicaState } from "./replica-probe";

/** Who reads: the user (their own writes send them to the primary for a while) and the request's window from its cookie. */
export type Reader = { userId: string; readPrimaryUntil?: number };

export type ReadSource = "replica" | "primary";

/** Why a read goes where it goes: `replica`, or the reason it went to the primary. */
export type ReadReason = "replica" | "no_replica" | "own_write" | Exclude<ReplicaState, "ok">;

/** Until when (ms since the epoch) each user's reads go to the primary, in this process. */
const wroteUntil = new Map<string, number>();

/**
 * Records that `userId` just wrote: their reads through this process go to the primary for the
 * bound's length. Returns until when (for the cookie that tells the other processes).
 */
export function noteWrite(userId: string, now = Date.now()): number {
  const until = now + env().DATABASE_REPLICA_MAX_LAG_MS;
  if (wroteUntil.size >= 10_000) for (const [k, t] of wroteUntil) if (t <= now) wroteUntil.delete(k);
  wroteUntil.set(userId, until);
  return until;
}

/** Forgets every recorded write (tests: a request served by another process, which knows only the cookie). */
export function forgetWrites(): void {
  wroteUntil.clear();
}

/** Where a read by `reader` (null: nobody's writes matter, as a metrics scrape) would go now, and why. */
export function readRoute(reader: Reader | null, now = Date.now()): { source: ReadSource; reason: ReadReason } {
  const r = replica();
  if (!r) return { source: "primary", reason: "no_replica" };
  if (reader && ((reader.readPrimaryUntil ?? 0) > now || (wroteUntil.get(reader.userId) ?? 0) > now)) {
    return { source: "primary", reason: "own_write" };
  }
  const { state } = r.probe.reading(now);
  return state === "ok" ? { source: "replica", reason: "replica" } : { source: "primary", reason: state };
}

/** A failure that says the replica itself is gone (not the query): refused, reset, shut down, timed out. */
function isConnectionFailure(err: unknown): boolean {
  const seen = new Set<unknown>();
  const texts: string[] = [];
  let e: unknown = err;
  while (e && typeof e === "object" && !seen.has(e)) {
    seen.add(e);
    const o = e as { code?: unknown; kind?: unknown; message?: unknown; cause?: unknown; meta?: unknown };
    texts.push(String(o.code ?? ""), String(o.kind ?? ""), String(o.message ?? ""));
    const adapter = (o.meta as { driverAdapterError?: unknown } | undefined)?.driverAdapterError;
    e = adapter ?? o.cause;
  }
  const all = texts.join(" ");
  return /ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENOTFOUND|EHOSTUNREACH|EPIPE|\b08\d{3}\b|\b57P0[123]\b|DatabaseNotReachable|ConnectionClosed|SocketTimeout|Connection terminated|timeout exceeded when trying to connect|Can't reach database server|terminating connection|the database system is (?:shutting down|starting up|not yet accepting connections)|Server has closed the connection/i.test(
    all,
  );
}

/**
 * Runs the console read `fn` on the database `readRoute` picks, handing it the client and the
 * source. A read that fails on the replica (a lost connection, a query cancelled by a recovery
 * conflict) is run again on the primary; an AppError (the reader's own fault) is not.
 */
export async function withReadDb<T>(
  reader: Reader | null,
  fn: (client: PrismaClient, source: ReadSource) => Promise<T>,
): Promise<T> {
  const r = replica();
  const route = readRoute(reader);
  if (!r || route.source === "primary") return fn(db(), "primary");
  try {
    return await fn(r.prisma, "replica");
  } catch (err) {
    if (err instanceof AppError) throw err;
    // A lost replica is logged once, by the probe, as its state changes; any other failure here.
    if (isConnectionFailure(err)) r.probe.markDown(err as Error);
    else logger.warn({ err }, `[replica] a read failed on the replica, reading the primary: ${(err as Error).message}`);
    return fn(db(), "primary");
  }
}

/** The replica as the console and metrics show it; null when none is configured. */
export type ReplicaStatusDto = {
  state: ReplicaState;
  /** Where reads of someone without recent writes go now. */
  readsFrom: ReadSource;
  /** How far behind it was at the last probe, in ms (at most; see lib/replica-probe.ts); null when not measured. */
  lagMs: number | null;
  /** WAL bytes flushed on the primary and not yet replayed, at the last probe. */
  lagBytes: number | null;
  /** DATABASE_REPLICA_MAX_LAG_MS. */
  maxLagMs: number;
  probedAt: string | null;
};

/** The replica's state for the overview and metrics (never its error's text: hosts and addresses stay in the logs). */
export function replicaStatus(now = Date.now()): ReplicaStatusDto | null {
  const r = replica();
  if (!r) return null;
  const reading: ReplicaReading = r.probe.reading(now);
  return {
    state: reading.state,
    readsFrom: reading.state === "ok" ? "replica" : "primary",
    lagMs: reading.lagMs,
    lagBytes: reading.lagBytes,
    maxLagMs: reading.maxLagMs,
    probedAt: reading.probedAt === null ? null : new Date(reading.probedAt).toISOString(),
  };
}

/** Probes the replica now (tests, and a caller that must not decide on a reading a moment old). */
export async function probeReplica(): Promise<void> {
  await replica()?.probe.probe();
}
