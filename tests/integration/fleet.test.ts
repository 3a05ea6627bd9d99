/**
 * Several hosts on one Postgres, connected directly: two real app servers and three real worker
 * processes (tests/helpers/fleet.ts says what is checked). fleet-pgbouncer.test.ts runs the same
 * through PgBouncer.
 */
import { test } from "node:test";
import { useTestDatabase } from "../helpers/db";
import { runFleet } from "../helpers/fleet";

const fx = useTestDatabase({ seed: 0.001 });

test(
  "two app servers and three workers on one Postgres: live across apps, caps fleet-wide, nothing lost",
  { timeout: 15 * 60_000 },
  () => runFleet(fx, fx.database.url, undefined, /\[db\] DATABASE_URL is direct .*prepared statements named/),
);
