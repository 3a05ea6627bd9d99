/**
 * A fresh database per test file, cloned from the migrated template that
 * tests/run.ts prepares, with lib/ pointed at it: `useTestDatabase()` at the
 * top of a file registers the hooks that make it (and seed it) before the
 * file's tests and drop it after them.
 */
import { after, before } from "node:test";
import pg from "pg";
import { closeDb } from "@/lib/db";
import { resetEnvCache } from "@/lib/env";
import { registerTask, unregisterTask } from "@/lib/jobs/registry";
import type { TaskDefinition } from "@/lib/jobs/task";
import "@/lib/workloads";
import { seedDemo, type DemoPrincipals } from "./fixtures";

function serverUrl(database: string): string {
  const base = process.env.TEST_SERVER_URL;
  if (!base) throw new Error("TEST_SERVER_URL is not set: run integration tests with `npm test -- integration`");
  const u = new URL(base);
  u.pathname = `/${database}`;
  return u.toString();
}

export type TestDatabase = { url: string; name: string; drop(): Promise<void> };

/** Clones the template into a new database and points DATABASE_URL (and lib/) at it. */
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

export type TestFixture = {
  /** This file's database. */
  readonly database: TestDatabase;
  /** The demo tenants' people (ada, oscar, gus, gina, root) and tenant ids. */
  readonly p: DemoPrincipals;
};

/**
 * The per-file setup: before the file's tests, a fresh database seeded with the
 * demo tenants at `seed` scale (default 0.01; `false`: no seed) and this
 * file's own task types registered; after them, all of it undone.
 */
export function useTestDatabase(
  opts: {
    seed?: number | false;
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    tasks?: TaskDefinition<any, any>[];
    /** Runs after the database is ready (and seeded), before the first test. */
    setup?: () => Promise<void>;
  } = {},
): TestFixture {
  let database: TestDatabase | undefined;
  let principals: DemoPrincipals | undefined;
  before(async () => {
    for (const task of opts.tasks ?? []) registerTask(task);
    database = await createTestDatabase();
    if (opts.seed !== false) principals = await seedDemo(opts.seed ?? 0.01);
    await opts.setup?.();
  });
  after(async () => {
    for (const task of opts.tasks ?? []) unregisterTask(task.type);
    await database?.drop();
  });
  return {
    get database() {
      if (!database) throw new Error("the test database is made in before(): use it inside a test");
      return database;
    },
    get p() {
      if (!principals) throw new Error("the demo data is seeded in before() (and not with seed: false)");
      return principals;
    },
  };
}
