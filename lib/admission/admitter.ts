/**
 * Admission's moving part. `conveyor_admit` (SQL, see the admission migration)
 * hands waiting jobs of one queue to graphile-worker: scopes not paused, tenants
 * under their cap, the queue's window not full, tenants served in a weighted
 * round-robin. Each worker process runs an Admitter that calls it
 *  - when told: a new job could not be admitted in its own INSERT, or a slot
 *    freed (NOTIFY conveyor_admit, sent at commit, merged per transaction);
 *  - on a sweep every ADMISSION_SWEEP_MS: retries and schedules that came due,
 *    and anything missed while the LISTEN connection (the process's notifier) was down.
 * Runs for one queue never overlap within a process, and a per-queue advisory
 * lock serializes them across processes (a run that finds it taken retries
 * shortly instead of queueing on it).
 */
import { setTimeout as sleep } from "node:timers/promises";
import { pool } from "../db";
import { env } from "../env";
import { queueNames, queues } from "../jobs/registry";
import type { QueueName } from "../jobs/task";
import { logger } from "../log";
import { notifier } from "../runtime/notifier";
import { loop, serviceContext, type LoopService, type Service, type ServiceContext } from "../runtime/service";

export const ADMIT_CHANNEL = "conveyor_admit";
const BATCH = 500;
/**
 * A run that found the queue's lock taken tries again this much later: the
 * holder may have read the queue before the change that woke this run.
 */
const BUSY_RETRY_MS = 25;

/**
 * One admission run for a queue (at most `max` jobs): how many it admitted, or
 * -1 when another run of the queue (in any process) held the queue's lock.
 */
export async function tryAdmitQueue(queue: string, max = BATCH): Promise<number> {
  const { rows } = await pool().query<{ n: number }>("SELECT conveyor_admit($1, $2) AS n", [queue, max]);
  return rows[0]?.n ?? 0;
}

/**
 * Admits waiting jobs of one queue now, waiting out a concurrent run for up to
 * `waitMs`; returns how many (0 if the queue stayed busy: the workers' admitters
 * and sweeps take over).
 */
export async function admitQueue(queue: string, max = BATCH, waitMs = 5_000): Promise<number> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const n = await tryAdmitQueue(queue, max);
    if (n >= 0) return n;
    if (Date.now() > deadline) return 0;
    await sleep(BUSY_RETRY_MS);
  }
}

/** Admits in every queue until nothing more fits; returns how many. */
export async function admitAll(): Promise<number> {
  let total = 0;
  for (const queue of queueNames()) {
    for (;;) {
      const n = await admitQueue(queue);
      total += n;
      if (n < BATCH) break;
    }
  }
  return total;
}

/**
 * Each queue's first values (the engine's and the manifests' queues, from their settings:
 * QUEUE_*), as `queues` rows: they only seed a database.
 */
export function configuredQueues(): { name: QueueName; tenantCap: number; window: number }[] {
  return queues().map((q) => ({ name: q.name, tenantCap: q.tenantCap(), window: q.window() }));
}

export type QueueSeedResult = {
  name: QueueName;
  /** This call wrote the environment's values (the queue had none set yet). */
  seeded: boolean;
  /** The values in force, from the database. */
  tenantCap: number;
  window: number;
  /** What this process's environment says (differs from the above when the database's win). */
  configured: { tenantCap: number; window: number };
};

/**
 * Seeds each queue's cap and window from the environment (QUEUE_*) where the
 * database holds none yet: a missing row, or the migrations' defaults that no
 * worker seeded and no platform admin edited (`configured_at` null). Every
 * worker calls it at start; only the first to reach a queue writes, so caps
 * are the fleet's, kept in the database and edited by platform admins
 * (`updateQueueSettings`), never the last started worker's environment.
 */
export async function seedQueueSettings(): Promise<QueueSeedResult[]> {
  const results: QueueSeedResult[] = [];
  for (const q of configuredQueues()) {
    // The row lock of ON CONFLICT makes two workers starting at once agree: the
    // second sees the first's configured_at and leaves the row alone.
    const { rows } = await pool().query<{ seeded: boolean }>(
      `INSERT INTO queues (name, tenant_cap, max_admitted, configured_at) VALUES ($1, $2, $3, now())
       ON CONFLICT (name) DO UPDATE SET tenant_cap = excluded.tenant_cap, max_admitted = excluded.max_admitted,
         configured_at = now(), updated_at = now()
       WHERE queues.configured_at IS NULL
       RETURNING true AS seeded`,
      [q.name, q.tenantCap, q.window],
    );
    const { rows: now } = await pool().query<{ tenantCap: number; window: number }>(
      `SELECT tenant_cap AS "tenantCap", max_admitted AS "window" FROM queues WHERE name = $1`,
      [q.name],
    );
    results.push({
      name: q.name,
      seeded: rows.length > 0,
      tenantCap: now[0]?.tenantCap ?? q.tenantCap,
      window: now[0]?.window ?? q.window,
      configured: { tenantCap: q.tenantCap, window: q.window },
    });
  }
  return results;
}

/** The lines a worker logs about `seedQueueSettings`: what it seeded, and environment values the database overrides. */
export function describeQueueSeed(results: QueueSeedResult[]): string[] {
  return results.flatMap((r) => {
    if (r.seeded)
      return [`[admission] queue ${r.name}: seeded cap ${r.tenantCap}, window ${r.window} from the environment`];
    if (r.tenantCap === r.configured.tenantCap && r.window === r.configured.window) return [];
    return [
      `[admission] queue ${r.name}: cap ${r.tenantCap}, window ${r.window} from the database; this worker's QUEUE_* ` +
        `(cap ${r.configured.tenantCap}, window ${r.configured.window}) only seed a new database — ` +
        `edit them on the console's Queues page or with PATCH /api/v1/ops/queues/${r.name}`,
    ];
  });
}

/**
 * Admission as a service: a loop per queue (lib/runtime/service.ts), woken by
 * `conveyor_admit` through the process's notifier (its payload names the
 * queue) and swept every ADMISSION_SWEEP_MS; after the notifier reconnects
 * every queue is swept at once. A lost or missing LISTEN connection never stops
 * a worker: the sweep covers until it is back.
 */
export class Admitter implements Service {
  readonly name = "admission";
  private readonly loops = new Map<string, LoopService>();
  private unsubscribe: (() => void) | null = null;
  private stopped = false;

  /** `log` gets the admitter's problems (a failed run): the process's log, as warnings, by default. */
  constructor(
    private readonly log: (line: string) => void = (l) => logger.warn(l),
    private readonly queues: () => readonly string[] = () => queueNames(),
  ) {
    for (const queue of this.queues()) this.loops.set(queue, this.queueLoop(queue));
  }

  private queueLoop(queue: string): LoopService {
    return loop({
      name: `admission:${queue}`,
      everyMs: () => env().ADMISSION_SWEEP_MS,
      runAtStart: true,
      async run() {
        const n = await tryAdmitQueue(queue);
        // A full batch: more may wait. The queue's lock taken elsewhere: the holder may have read
        // the queue before the change that woke this run, so look again shortly.
        if (n >= BATCH) return { nextInMs: 0 };
        if (n < 0) return { nextInMs: BUSY_RETRY_MS };
        return [];
      },
    });
  }

  async start(ctx: ServiceContext = serviceContext("", this.name)): Promise<void> {
    this.stopped = false;
    const log: ServiceContext["log"] = (line, level) =>
      level === "error" || level === "warn" ? this.log(`[admission] ${line}`) : ctx.log(line, level);
    // Never fails: when the connection cannot be made now, the sweep covers until it is back.
    this.unsubscribe = await notifier().subscribe(ADMIT_CHANNEL, (queue) => this.wake(queue), {
      whenDown: "retry",
      onReconnected: () => this.sweep(),
    });
    for (const [queue, l] of this.loops) {
      await l.start({ ...ctx, log: (line, level) => log(`${queue}: ${line}`, level) });
    }
  }

  /** Admits in `queue` soon; calls arriving during a run are merged into one more run. */
  wake(queue: string): void {
    if (!this.stopped) this.loops.get(queue)?.wake();
  }

  private sweep(): void {
    for (const l of this.loops.values()) l.wake();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    this.unsubscribe = null;
    await Promise.allSettled([...this.loops.values()].map((l) => l.stop()));
  }
}
