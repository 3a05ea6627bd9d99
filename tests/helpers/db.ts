/**
 * A fresh database per test file, cloned from the migrated template that
 * tests/run.ts prepares. Sets DATABASE_URL so lib/ connects to it.
 */
import pg from "pg";
import { closeDb } from "@/lib/db";
import { resetEnvCache } from "@/lib/env";

function serverUrl(database: string): string {
  const base = process.env.TEST_SERVER_URL;
  if (!base) throw new Error("TEST_SERVER_URL is not set: run integration tests with `npm test -- integration`");
  const u = new URL(base);
  u.pathname = `/${database}`;
  return u.toString();
}

export type TestDatabase = { url: string; name: string; drop(): Promise<void> };

export async function createTestDatabase(): Promise<TestDatabase> {
  const template = process.env.TEST_TEMPLATE_DB;
  if (!template) throw new Error("TEST_TEMPLATE_DB is not set: run integration tests with `npm test -- integration`");
  const name = `conveyor_t_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  const admin = new pg.Client({ connectionString: serverUrl("postgres") });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name} TEMPLATE ${template}`);
  await admin.end();
  const url = serverUrl(name);
  process.env.DATABASE_URL = url;
  resetEnvCache();
  return {
    url,
    name,
    async drop() {
      await closeDb();
      const c = new pg.Client({ connectionString: serverUrl("postgres") });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}
