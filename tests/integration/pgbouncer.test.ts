/**
 * Through a real PgBouncer (Debian's 1.18, transaction pooling; tests/helpers/pgbouncer.ts): the probe
 * at a process's start (lib/pooler.ts) tells it from a direct connection, names no statement through
 * it (1.18 keeps none across its server connections), and refuses, with what to change, the
 * configurations that would fail later. Skips, saying why, where PgBouncer is not installed.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import pg from "pg";
import { bookkeepingPool, closeDb, db, pool, prepared } from "@/lib/db";
import { resetEnvCache } from "@/lib/env";
import { DatabaseConfigError, probePooler, resetStatementsSettled, settleStatements } from "@/lib/pooler";
import { useTestDatabase } from "../helpers/db";
import { pgbouncerMissing, startPgBouncer, type PgBouncer } from "../helpers/pgbouncer";

const fx = useTestDatabase({ seed: false });
const missing = pgbouncerMissing();
if (missing) console.log(`[pgbouncer.test] skipped: ${missing}`);

function setEnv(vars: Record<string, string | undefined>): void {
  for (const [k, v] of Object.entries(vars)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  resetEnvCache();
}

describe("through PgBouncer (transaction pooling)", { skip: missing ?? false }, () => {
  let bouncer: PgBouncer;
  let direct: string;
  let pooled: string;
  before(async () => {
    bouncer = await startPgBouncer(fx.database.url);
    direct = fx.database.url;
    pooled = bouncer.urlFor(direct);
  });
  after(async () => {
    await closeDb();
    resetStatementsSettled();
    setEnv({ DATABASE_URL: direct, DATABASE_DIRECT_URL: undefined, DATABASE_PREPARED_STATEMENTS: undefined });
    await bouncer?.stop();
  });

  test("the hazard is real: a named statement, prepared by one client, is gone once it moves to another server", async () => {
    const a = new pg.Client({ connectionString: pooled });
    const b = new pg.Client({ connectionString: pooled });
    await Promise.all([a.connect(), b.connect()]);
    try {
      const named = { name: "cvy_hazard", text: "SELECT pg_backend_pid() AS pid" };
      const first = (await a.query(named)).rows[0].pid;
      await b.query("BEGIN");
      const held = (await b.query("SELECT pg_backend_pid() AS pid")).rows[0].pid;
      assert.equal(held, first, "PgBouncer handed B the server A had just freed");
      await assert.rejects(a.query(named), {
        code: "26000",
        message: /prepared statement "cvy_hazard" does not exist/,
      });
      await b.query("COMMIT");
    } finally {
      await Promise.all([a.end(), b.end()]);
    }
  });

  test("the probe: direct keeps one backend; PgBouncer 1.18 pools and keeps no named statement", async () => {
    const d = await probePooler(direct);
    assert.deepEqual({ pooled: d.pooled, keepsPrepared: d.keepsPrepared }, { pooled: false, keepsPrepared: true });
    const p = await probePooler(pooled);
    assert.deepEqual({ pooled: p.pooled, keepsPrepared: p.keepsPrepared }, { pooled: true, keepsPrepared: false });
    assert.match(p.detail, /does not exist/);
  });

  test("with the two URLs set and nothing else, statements go unnamed and the app's pools work through it", async () => {
    await closeDb();
    setEnv({ DATABASE_URL: pooled, DATABASE_DIRECT_URL: direct, DATABASE_PREPARED_STATEMENTS: undefined });
    const settled = await settleStatements();
    assert.deepEqual({ named: settled.named, pooled: settled.pooled }, { named: false, pooled: true });
    assert.match(
      settled.line,
      /DATABASE_URL is pooled .*prepared statements unnamed \(DATABASE_PREPARED_STATEMENTS=auto\)/,
    );
    assert.equal(prepared("SELECT 1").name, undefined);
    // Many concurrent clients, each statement of one on whichever server PgBouncer gives: none fails.
    const text = prepared("SELECT $1::int + 1 AS n");
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) => pool().query<{ n: number }>({ ...text, values: [i] })),
    );
    assert.deepEqual(
      results.map((r) => r.rows[0]!.n),
      Array.from({ length: 200 }, (_, i) => i + 1),
    );
    // The workers' bookkeeping pool sets no startup parameter (PgBouncer refuses `options`).
    assert.equal((await bookkeepingPool().query("SELECT 1 AS one")).rows[0].one, 1);
    // Prisma's statements (unnamed) too.
    assert.equal(await db().tenant.count(), 0);
  });

  test("DATABASE_PREPARED_STATEMENTS=1 through it refuses to start, saying what to change", async () => {
    resetStatementsSettled();
    setEnv({ DATABASE_URL: pooled, DATABASE_DIRECT_URL: direct, DATABASE_PREPARED_STATEMENTS: "1" });
    await assert.rejects(settleStatements(), (err: Error) => {
      assert.ok(err instanceof DatabaseConfigError);
      assert.match(err.message, /DATABASE_PREPARED_STATEMENTS=1, but DATABASE_URL goes through a pooler/);
      assert.match(err.message, /Unset it \(auto\) or set it to 0/);
      return true;
    });
    setEnv({ DATABASE_PREPARED_STATEMENTS: "0" });
    assert.equal((await settleStatements()).named, false, "0 through it is fine");
  });

  test("LISTEN's connection through it refuses to start: DATABASE_DIRECT_URL unset, or pointing at it", async () => {
    resetStatementsSettled();
    setEnv({ DATABASE_URL: pooled, DATABASE_DIRECT_URL: undefined, DATABASE_PREPARED_STATEMENTS: undefined });
    await assert.rejects(settleStatements(), /DATABASE_DIRECT_URL is not set: LISTEN and graphile-worker need/);
    setEnv({ DATABASE_URL: direct, DATABASE_DIRECT_URL: pooled });
    await assert.rejects(settleStatements(), /DATABASE_DIRECT_URL goes through a transaction pooler/);
  });

  test("direct, auto names the hot statements", async () => {
    resetStatementsSettled();
    setEnv({ DATABASE_URL: direct, DATABASE_DIRECT_URL: undefined, DATABASE_PREPARED_STATEMENTS: undefined });
    assert.match(prepared("SELECT 2").name ?? "unnamed", /unnamed/, "not before the probe");
    const settled = await settleStatements();
    assert.deepEqual({ named: settled.named, pooled: settled.pooled }, { named: true, pooled: false });
    assert.match(prepared("SELECT 2").name ?? "", /^cvy_/);
  });
});
