/**
 * Direct or through a pooler: what DATABASE_URL leads to, found by trying it at a process's start
 * (settleStatements()), and what follows — whether lib/db.ts's prepared() names statements and
 * whether the workers' bookkeeping pool sets a startup parameter — or a refusal to start with what to
 * change (docs/DEPLOY.md#pgbouncer). Apart from lib/db.ts (pg only, no Prisma), so that the web server
 * (scripts/serve.ts, bundled on its own in the image) can run it before Next.js loads.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { databaseUrl, directDatabaseUrl, env } from "./env";

/** What a probe of a database URL found (probePooler). */
export type PoolerProbe = {
  /** One client's statements ran on more than one server session: a transaction (or statement) pooler. */
  pooled: boolean;
  /** A named statement prepared by a client was still there after it moved (PgBouncer 1.21+ with max_prepared_statements); true when not pooled. */
  keepsPrepared: boolean;
  /** What was seen, for the start-up line. */
  detail: string;
};

/**
 * Whether `url` leads to a transaction pooler, and whether one keeps a client's named statements. Two
 * clients of `url`: A prepares a named statement that reads its backend's pid; B opens a transaction,
 * which holds a server connection; A runs its statement again while B holds it and after B commits, a
 * few rounds. Directly (or through session pooling) A keeps its own backend throughout and B always has
 * another. Through a transaction pooler A's statement soon lands on another backend (PgBouncer hands out
 * its most recently freed server first, so usually B's at once), and there it either runs (the pooler
 * prepared it again: kept) or fails with `prepared statement "…" does not exist` (PgBouncer before 1.21,
 * or max_prepared_statements = 0: not kept). A pooler that refuses a transaction block (statement pooling)
 * counts as pooled and not keeping them. Proof, not inference: nothing here reads a version string.
 */
export async function probePooler(url: string): Promise<PoolerProbe> {
  const open = async () => {
    const c = new pg.Client({
      connectionString: url,
      connectionTimeoutMillis: 10_000,
      application_name: "conveyor-probe",
    });
    c.on("error", () => {}); // a pooler closing it mid-probe: the query in flight fails instead
    await c.connect();
    return c;
  };
  const a = await open();
  const b = await open().catch(async (err: Error) => {
    await a.end().catch(() => {});
    throw err;
  });
  const pidOf = async (c: pg.Client, q: pg.QueryConfig) => (await c.query<{ pid: number }>(q)).rows[0]!.pid;
  const named = { name: `cvy_probe_${randomBytes(6).toString("hex")}`, text: "SELECT pg_backend_pid() AS pid" };
  try {
    const first = await pidOf(a, named);
    const again = async (): Promise<PoolerProbe | null> => {
      try {
        const pid = await pidOf(a, named);
        if (pid === first) return null;
        return {
          pooled: true,
          keepsPrepared: true,
          detail: `one client's statements ran on backends ${first} and ${pid}, and its named statement was there on both`,
        };
      } catch (err) {
        if ((err as { code?: string }).code !== "26000") throw err;
        return {
          pooled: true,
          keepsPrepared: false,
          detail: `one client's statements moved to another backend, where its named statement did not exist (${(err as Error).message})`,
        };
      }
    };
    for (let round = 0; round < 3; round++) {
      try {
        await b.query("BEGIN");
        await pidOf(b, { text: "SELECT pg_backend_pid() AS pid" });
      } catch (err) {
        return {
          pooled: true,
          keepsPrepared: false,
          detail: `a transaction block was refused (${(err as Error).message})`,
        };
      }
      const whileHeld = await again();
      await b.query("COMMIT");
      const found = whileHeld ?? (await again());
      if (found) return found;
    }
    return { pooled: false, keepsPrepared: true, detail: `one client kept backend ${first} throughout` };
  } finally {
    await Promise.all([a.end().catch(() => {}), b.end().catch(() => {})]);
  }
}

/** A configuration settleStatements() refuses: the process should not start. */
export class DatabaseConfigError extends Error {}

/** What settleStatements() decided; on globalThis, as the pools, so that Next.js's bundles see it too. */
export type StatementsSettled = { named: boolean; pooled: boolean; line: string };
const settledKey = Symbol.for("conveyor.db.statements");
const settledStore = globalThis as unknown as { [settledKey]?: StatementsSettled };

export function statementsSettled(): StatementsSettled | undefined {
  return settledStore[settledKey];
}

/** Forgets what settleStatements() decided (tests). */
export function resetStatementsSettled(): void {
  delete settledStore[settledKey];
}

/**
 * Run once at a process's start (the app server, a worker), before the pools' first use: probes
 * DATABASE_URL (probePooler) and decides whether `prepared()` names statements and whether the workers'
 * bookkeeping pool may set `synchronous_commit` as a startup parameter. Throws, with what to change,
 * when the configuration would fail later: DATABASE_PREPARED_STATEMENTS=1 through a pooler that drops
 * named statements (each request would fail with `prepared statement "…" does not exist`), or
 * LISTEN and graphile-worker's connection (DATABASE_DIRECT_URL, else DATABASE_URL) through a
 * transaction pooler, where notifications never arrive. Returns the line to log.
 */
export async function settleStatements(): Promise<StatementsSettled> {
  const mode = env().DATABASE_PREPARED_STATEMENTS;
  const url = databaseUrl();
  const probe = await probePooler(url);
  const direct = directDatabaseUrl();
  const directProbe = direct === url ? probe : await probePooler(direct);
  if (directProbe.pooled) {
    throw new DatabaseConfigError(
      env().DATABASE_DIRECT_URL
        ? `DATABASE_DIRECT_URL goes through a transaction pooler (${directProbe.detail}): LISTEN and graphile-worker need a session of their own. Point it at Postgres itself (docs/DEPLOY.md#pgbouncer).`
        : `DATABASE_URL goes through a transaction pooler (${probe.detail}) and DATABASE_DIRECT_URL is not set: LISTEN and graphile-worker need a session of their own. Set DATABASE_DIRECT_URL to Postgres itself (docs/DEPLOY.md#pgbouncer).`,
    );
  }
  if (mode === "1" && !probe.keepsPrepared) {
    throw new DatabaseConfigError(
      `DATABASE_PREPARED_STATEMENTS=1, but DATABASE_URL goes through a pooler that does not keep named statements (${probe.detail}): every request would fail with "prepared statement does not exist". Unset it (auto) or set it to 0, or use PgBouncer 1.21 or later with max_prepared_statements (docs/DEPLOY.md#pgbouncer).`,
    );
  }
  const named = mode === "1" || (mode === "auto" && probe.keepsPrepared);
  const where = probe.pooled ? `DATABASE_URL is pooled (${probe.detail})` : `DATABASE_URL is direct (${probe.detail})`;
  const settled: StatementsSettled = {
    named,
    pooled: probe.pooled,
    line: `[db] ${where}: prepared statements ${named ? "named" : "unnamed"} (DATABASE_PREPARED_STATEMENTS=${mode})`,
  };
  settledStore[settledKey] = settled;
  return settled;
}
