/**
 * DATABASE_DIRECT_URL (docs/DEPLOY.md, PgBouncer): with DATABASE_URL through a
 * transaction-pooling PgBouncer, the LISTEN clients must connect directly.
 * The job-events hub connects to DATABASE_DIRECT_URL, the pools to DATABASE_URL.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { db } from "@/lib/db";
import { directDatabaseUrl, resetEnvCache } from "@/lib/env";
import { eventHub } from "@/lib/events/hub";
import { useTestDatabase } from "../helpers/db";

const fx = useTestDatabase({ seed: false });

function setDirect(url: string | undefined): void {
  if (url === undefined) delete process.env.DATABASE_DIRECT_URL;
  else process.env.DATABASE_DIRECT_URL = url;
  resetEnvCache();
}

describe("DATABASE_DIRECT_URL", () => {
  test("unset, it is DATABASE_URL", () => {
    setDirect(undefined);
    assert.equal(directDatabaseUrl(), fx.database.url);
  });

  test("the LISTEN connection uses it, the pools do not", async () => {
    // Nothing listens on port 1: a hub that used it could not subscribe, the pools are unaffected.
    const nowhere = Object.assign(new URL(fx.database.url), { port: "1" }).toString();
    setDirect(nowhere);
    try {
      await assert.rejects(
        eventHub().subscribe({}, () => {}),
        /ECONNREFUSED/,
      );
      const [row] = await db().$queryRaw<{ one: number }[]>`SELECT 1 AS one`;
      assert.equal(row!.one, 1);

      setDirect(fx.database.url);
      const unsubscribe = await eventHub().subscribe({}, () => {});
      const [listening] = await db().$queryRaw<{ n: bigint }[]>`
        SELECT count(*) AS n FROM pg_stat_activity
        WHERE datname = current_database() AND application_name = ${`conveyor-listen:${process.pid}`}`;
      assert.equal(Number(listening!.n), 1);
      unsubscribe();
    } finally {
      setDirect(undefined);
    }
  });
});
