/**
 * The Prisma client and the node-postgres pool behind it. One pool per
 * process, created on first use, so importing lib/ never connects.
 */
import { createHash } from "node:crypto";
import pg from "pg";
import { PrismaPg } from "@prisma/adapter-pg";
import { PrismaClient } from "./generated/prisma/client";
import { databaseUrl, env } from "./env";
import { statementsSettled } from "./pooler";
import { logger } from "./log";
import { ReplicaProbe } from "./replica-probe";

export { Prisma } from "./generated/prisma/client";
export type { PrismaClient } from "./generated/prisma/client";

/** The read replica's pool, its Prisma client and the probe that measures its lag (lib/replica-probe.ts). */
export type Replica = { pool: pg.Pool; prisma: PrismaClient; probe: ReplicaProbe };

type Handles = { pool: pg.Pool; prisma: PrismaClient; bookkeeping?: pg.Pool; replica?: Replica | null };
const globalKey = Symbol.for("conveyor.db");
const store = globalThis as unknown as { [globalKey]?: Handles };

function handles(): Handles {
  let h = store[globalKey];
  if (!h) {
    // Room for every job slot's COPY stream plus its heartbeats and progress writes, capped:
    // `npm start` runs four processes against one server (100 connections by default), and a
    // wide pool (webhooks) mostly waits on the network, not on Postgres.
    const pool = new pg.Pool({
      connectionString: databaseUrl(),
      max: Math.max(10, Math.min(16, env().WORKER_CONCURRENCY * 2 + 4)),
      // Surface an exhausted pool as an error instead of waiting forever.
      connectionTimeoutMillis: 30_000,
      keepAlive: true,
    });
    guardClients(pool);
    const prisma = new PrismaClient({
      adapter: new PrismaPg(pool),
      // Generous: a loaded 2-core box can stall a short transaction for seconds.
      transactionOptions: { maxWait: 15_000, timeout: 30_000 },
    });
    h = { pool, prisma };
    store[globalKey] = h;
  }
  return h;
}

/**
 * A lost connection must not crash the process, whether its client is idle in the pool or checked
 * out between two statements (a transaction waiting on JavaScript, a COPY's consumer): pg-pool
 * listens for an idle client's errors only, and an `error` event nobody listens to is an uncaught
 * exception, which ends a worker with all its attempts. The holder's next statement fails instead
 * ("not queryable"), its error path runs, and the pool drops the client when it comes back.
 */
function guardClients(p: pg.Pool): void {
  p.on("error", (err) => logger.warn({ err }, `[db] idle client error: ${err.message}`));
  p.on("connect", (client) => {
    client.on("error", (err) => logger.debug({ err }, `[db] client error while in use: ${err.message}`));
  });
}

/** The shared Prisma client. */
export function db(): PrismaClient {
  return handles().prisma;
}

/** The shared pg pool, for COPY streams and LISTEN-free raw work. */
export function pool(): pg.Pool {
  return handles().pool;
}

/**
 * A pool for the runner's own bookkeeping — claims, heartbeats, progress and
 * fenced success writes — with `synchronous_commit = off`: a commit returns
 * before its WAL is flushed. A Postgres crash can forget the last fraction of
 * a second of these writes, which at-least-once execution already covers: a
 * forgotten claim leaves the job waiting (the reaper re-dispatches it), a
 * forgotten success leaves it running until its lease expires and it runs
 * again. Creating jobs (the 202 promise) and everything else stays durable.
 */
export function bookkeepingPool(): pg.Pool {
  const h = handles();
  if (!h.bookkeeping) {
    // Through a transaction pooler (settleStatements() found one) the commits stay durable: PgBouncer
    // refuses the `options` startup parameter, and a session SET would reach other clients' transactions.
    const pooled = statementsSettled()?.pooled ?? false;
    h.bookkeeping = new pg.Pool({
      connectionString: databaseUrl(),
      max: Math.max(4, Math.min(10, env().WORKER_CONCURRENCY + 2)),
      connectionTimeoutMillis: 30_000,
      keepAlive: true,
      ...(pooled ? {} : { options: "-c synchronous_commit=off" }),
    });
    guardClients(h.bookkeeping);
  }
  return h.bookkeeping;
}

/**
 * The read replica (DATABASE_REPLICA_URL), made on first use with its lag probe running; null when
 * none is configured. Only lib/read-db.ts decides what reads from it.
 */
export function replica(): Replica | null {
  const h = handles();
  if (h.replica === undefined) {
    const url = env().DATABASE_REPLICA_URL;
    if (!url) return (h.replica = null);
    const replicaPool = new pg.Pool({
      connectionString: url,
      // The console's reads and the probe: a handful at once per process.
      max: 6,
      // A replica that does not answer is given up on soon: the read then goes to the primary.
      connectionTimeoutMillis: 5_000,
      keepAlive: true,
    });
    guardClients(replicaPool);
    const prisma = new PrismaClient({ adapter: new PrismaPg(replicaPool) });
    const probe = new ReplicaProbe(h.pool, replicaPool, () => env().DATABASE_REPLICA_MAX_LAG_MS);
    h.replica = { pool: replicaPool, prisma, probe };
    probe.start();
  }
  return h.replica;
}

const preparedNames = new Map<string, string>();

/**
 * `text` as a statement prepared once per connection: `client.query({ ...prepared(text), values })`.
 * Postgres then parses it once per connection and, after five runs, keeps a generic plan when it
 * costs no more than the ones made for each run's values. Planning was most of the hot statements'
 * time in Postgres: bench:api with pg_stat_statements put a token's lookup at 0.25 ms of planning
 * against 0.06 ms of execution, a worker's claim at 0.5 ms of planning (docs/BENCHMARKS.md). Only for
 * texts that are fixed or come in a few variants (each name stays prepared on every connection), and
 * whose best plan does not depend on the values: lookups by a unique key or by ids. A generic plan is
 * made without the values, so a list whose best plan depends on the tenant or the limit stays unnamed.
 * DATABASE_PREPARED_STATEMENTS=0 (a PgBouncer that cannot keep them): unnamed, as every other statement;
 * `auto` (the default): named once settleStatements() found they are kept, unnamed until then.
 */
export function prepared(text: string): { text: string; name?: string } {
  const mode = env().DATABASE_PREPARED_STATEMENTS;
  if (mode === "0" || (mode === "auto" && !statementsSettled()?.named)) return { text };
  let name = preparedNames.get(text);
  if (!name) {
    name = `cvy_${createHash("sha1").update(text).digest("hex").slice(0, 20)}`;
    preparedNames.set(text, name);
  }
  return { text, name };
}

/** What runs a statement: a pool, or one client inside a transaction. */
export type SqlClient = Pick<pg.PoolClient, "query">;

/**
 * Runs `fn` in a transaction on one client of `from` (default: the shared
 * pool): BEGIN, then COMMIT, or ROLLBACK when `fn` throws.
 */
export async function inTransaction<T>(fn: (tx: pg.PoolClient) => Promise<T>, from: pg.Pool = pool()): Promise<T> {
  const client = await from.connect();
  let broken: Error | undefined;
  try {
    await client.query("BEGIN");
    const result = await fn(client);
    await client.query("COMMIT");
    return result;
  } catch (err) {
    await client.query("ROLLBACK").catch((e: Error) => (broken = e));
    throw err;
  } finally {
    client.release(broken);
  }
}

/**
 * Makes `signal` cancel what `client` is running: a long statement (a commit's
 * INSERT of millions of rows) does not look at the signal, so when it fires,
 * another connection asks Postgres to cancel it (`pg_cancel_backend`) and the
 * statement fails at once. Returns the function that stops listening.
 */
export async function cancelOnAbort(client: SqlClient, signal: AbortSignal): Promise<() => void> {
  const { rows } = await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
  const pid = rows[0]!.pid;
  const cancel = () =>
    void pool()
      .query("SELECT pg_cancel_backend($1)", [pid])
      .catch(() => {});
  if (signal.aborted) cancel();
  signal.addEventListener("abort", cancel, { once: true });
  return () => signal.removeEventListener("abort", cancel);
}

/** Closes the pools (scripts and tests). */
export async function closeDb(): Promise<void> {
  const h = store[globalKey];
  if (!h) return;
  delete store[globalKey];
  await h.prisma.$disconnect();
  await h.pool.end().catch(() => {});
  await h.bookkeeping?.end().catch(() => {});
  if (h.replica) {
    h.replica.probe.stop();
    await h.replica.prisma.$disconnect();
    await h.replica.pool.end().catch(() => {});
  }
}
