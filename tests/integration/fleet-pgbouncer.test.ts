/**
 * The fleet test (tests/helpers/fleet.ts: two app servers, three workers, the same assertions) with
 * DATABASE_URL through a real PgBouncer in transaction pooling mode (Debian's 1.18,
 * tests/helpers/pgbouncer.ts) and DATABASE_DIRECT_URL straight to Postgres — nothing else set: each
 * process's start-up probe finds the pooler and sends its statements unnamed. Skips, saying why,
 * where PgBouncer is not installed.
 */
import { test } from "node:test";
import { useTestDatabase } from "../helpers/db";
import { runFleet } from "../helpers/fleet";
import { pgbouncerMissing, startPgBouncer } from "../helpers/pgbouncer";

const fx = useTestDatabase({ seed: 0.001 });

const noBouncer = pgbouncerMissing();
if (noBouncer) console.log(`[fleet-pgbouncer.test] skipped: ${noBouncer}`);

test(
  "the same fleet with DATABASE_URL through PgBouncer (transaction pooling) and DATABASE_DIRECT_URL direct",
  { timeout: 15 * 60_000, skip: noBouncer ?? false },
  async () => {
    const bouncer = await startPgBouncer(fx.database.url);
    try {
      // Nothing else set: the probe finds the pooler and sends every statement unnamed.
      await runFleet(
        fx,
        bouncer.urlFor(fx.database.url),
        fx.database.url,
        /\[db\] DATABASE_URL is pooled .*prepared statements unnamed \(DATABASE_PREPARED_STATEMENTS=auto\)/,
      );
    } finally {
      await bouncer.stop();
    }
  },
);
