/**
 * How far behind the primary a streaming replica is (DATABASE_REPLICA_URL), measured by a probe in
 * each process that reads from it (lib/db.ts starts one with the replica's pool): every interval it
 * reads the primary's flushed WAL position (`pg_current_wal_flush_lsn()`), then the replica's
 * replayed one (`pg_last_wal_replay_lsn()`). Once the replica's replay position reaches a sample's,
 * it holds everything the primary had flushed when that sample was taken: the newest such sample's
 * time (`freshAt`) bounds how stale a read on the replica can be — by `now − freshAt`, which keeps
 * growing until the next probe, so a read is judged by the bound as of the moment it asks.
 *
 * Why positions and not `now() − pg_last_xact_replay_timestamp()`: on an idle primary the last
 * replayed commit is old however caught up the replica is, so that measure would fall back for
 * nothing, and it compares two machines' clocks. Positions are compared with this process's clock
 * alone and read 0 on an idle primary. The flushed position, not the inserted one: a commit is
 * flushed before it is acknowledged, so the flushed position at a sample covers every write
 * acknowledged before it; and the insert position can sit past a page header the replica never
 * reports (0/3000028 against a replayed 0/3000000 on an idle Postgres 15).
 * The resolution is the probe's interval: on a busy primary the replica seldom reaches the sample
 * taken a moment before, and the lag then reads up to one interval more than it is (an upper bound,
 * never less).
 */
import type pg from "pg";
import { logger } from "./log";

type Queryable = Pick<pg.Pool, "query">;

/**
 * `ok`: reads may go to the replica. `lagging`: it is further behind than the bound (or not yet
 * measured against a sample). `down`: unreachable, or a query on it failed. `not_standby`: it
 * answers but is not in recovery (a promoted replica, or a URL that names a primary): reading it
 * could show data the primary never had. `unknown`: not probed yet.
 */
export type ReplicaState = "unknown" | "ok" | "lagging" | "down" | "not_standby";

export type ReplicaReading = {
  state: ReplicaState;
  /** When the last probe ended (ms since the epoch), or null before the first. */
  probedAt: number | null;
  /** How far behind the replica was at the last probe, in ms (an upper bound; see above); null when not measured. */
  lagMs: number | null;
  /** WAL bytes the primary had flushed that the replica had not replayed, at the last probe. */
  lagBytes: number | null;
  /** The bound reads are held to, in ms (DATABASE_REPLICA_MAX_LAG_MS). */
  maxLagMs: number;
  /** Why the replica is down or not used (the last error's message), else null. */
  error: string | null;
};

/** `X/Y` (two hex numbers) as one 64-bit position. */
export function parseLsn(text: string): bigint {
  const m = /^([0-9A-F]+)\/([0-9A-F]+)$/i.exec(text);
  if (!m) throw new Error(`not a WAL position: ${text}`);
  return (BigInt(`0x${m[1]}`) << 32n) + BigInt(`0x${m[2]}`);
}

/** Primary positions kept for the replica to reach (one a probe: minutes of them). */
const MAX_SAMPLES = 1_000;

/** A probe's own statements give up after this long (a hung replica must not hold every later probe). */
const PROBE_QUERY_TIMEOUT_MS = 2_000;

export class ReplicaProbe {
  private samples: { at: number; lsn: bigint }[] = [];
  private probedAt: number | null = null;
  private up = false;
  private standby = false;
  private freshAt: number | null = null;
  private lagMs: number | null = null;
  private lagBytes: number | null = null;
  private error: string | null = null;
  private running: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private logged: ReplicaState = "unknown";

  constructor(
    private readonly primary: Queryable,
    private readonly replica: Queryable,
    /** The bound, read at each use (DATABASE_REPLICA_MAX_LAG_MS). */
    private readonly maxLagMs: () => number,
  ) {}

  /** Probes now and then every interval: a quarter of the bound, at most a second (so the bound is judged on fresh samples). */
  start(): void {
    if (this.timer || this.stopped) return;
    const tick = () => {
      void this.probe().finally(() => {
        if (this.stopped) return;
        this.timer = setTimeout(tick, Math.max(25, Math.min(1_000, Math.floor(this.maxLagMs() / 4))));
        this.timer.unref();
      });
    };
    tick();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** One probe (callers at the same moment share it); it never throws. */
  probe(): Promise<void> {
    return (this.running ??= this.measure().finally(() => {
      this.running = null;
      this.logChange();
    }));
  }

  /** One line when the replica's state changes (greppable: `[replica]`), with the error that made it. */
  private logChange(): void {
    const r = this.reading();
    if (r.state === this.logged) return;
    const was = this.logged;
    this.logged = r.state;
    const lag = r.lagMs === null ? "" : `, ${r.lagMs} ms behind`;
    if (r.state === "ok") logger.info(`[replica] in use (was ${was}${lag})`);
    else logger.warn(`[replica] ${r.state}: reads go to the primary${lag}${r.error ? ` (${r.error})` : ""}`);
  }

  private async measure(): Promise<void> {
    const sentAt = Date.now();
    let primaryLsn: bigint;
    try {
      const { rows } = await this.primary.query<{ lsn: string }>({
        text: "SELECT pg_current_wal_flush_lsn()::text AS lsn",
        query_timeout: PROBE_QUERY_TIMEOUT_MS,
      } as pg.QueryConfig);
      primaryLsn = parseLsn(rows[0]!.lsn);
    } catch (err) {
      // Nothing to compare with: the replica keeps its last reading, which ages past the bound.
      this.error = `primary: ${(err as Error).message}`;
      return;
    }
    this.samples.push({ at: sentAt, lsn: primaryLsn });
    // Samples the replica may yet reach; past the cap the oldest go (the lag then reads longer, never shorter).
    if (this.samples.length > MAX_SAMPLES) this.samples.shift();
    try {
      const { rows } = await this.replica.query<{ standby: boolean; lsn: string | null }>({
        text: "SELECT pg_is_in_recovery() AS standby, pg_last_wal_replay_lsn()::text AS lsn",
        query_timeout: PROBE_QUERY_TIMEOUT_MS,
      } as pg.QueryConfig);
      const at = Date.now();
      const { standby, lsn } = rows[0]!;
      this.probedAt = at;
      this.up = true;
      this.standby = standby;
      if (!standby || lsn === null) {
        this.freshAt = this.lagMs = this.lagBytes = null;
        this.error = standby
          ? "the replica has replayed nothing yet"
          : "the replica is not in recovery (not a standby)";
        return;
      }
      const replayed = parseLsn(lsn);
      // Replay only moves forward: a sample once reached stays reached, and those before it are done with.
      const reached = this.samples.findLastIndex((s) => s.lsn <= replayed);
      if (reached >= 0) {
        this.freshAt = this.samples[reached]!.at;
        this.samples.splice(0, reached);
      }
      // Never measured against a sample (a replica found behind at its first probe): at least as far behind as the oldest.
      this.lagMs = at - (this.freshAt ?? this.samples[0]!.at);
      this.lagBytes = primaryLsn > replayed ? Number(primaryLsn - replayed) : 0;
      this.error = null;
    } catch (err) {
      this.markDown(err as Error);
    }
  }

  /** A query on the replica failed for want of the replica: reads go to the primary until a probe finds it again. */
  markDown(err: Error): void {
    this.probedAt = Date.now();
    this.up = false;
    this.freshAt = null;
    // The last line: Prisma puts its invocation before the driver's message.
    this.error = (err.message || String(err)).trim().split("\n").at(-1) ?? null;
    this.logChange();
  }

  /** The replica as of `now`: its state judged with the bound against how stale it may have grown since. */
  reading(now = Date.now()): ReplicaReading {
    const maxLagMs = this.maxLagMs();
    const state: ReplicaState =
      this.probedAt === null
        ? "unknown"
        : !this.up
          ? "down"
          : !this.standby
            ? "not_standby"
            : this.freshAt === null || now - this.freshAt > maxLagMs
              ? "lagging"
              : "ok";
    return {
      state,
      probedAt: this.probedAt,
      lagMs: this.up && this.standby ? this.lagMs : null,
      lagBytes: this.up && this.standby ? this.lagBytes : null,
      maxLagMs,
      error: this.error,
    };
  }
}
