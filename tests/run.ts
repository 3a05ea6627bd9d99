/**
 * `npm test`: every test, against real Postgres.
 *   npm test                 unit, integration, then e2e (Playwright)
 *   npm test -- unit|integration|e2e
 * With DATABASE_URL set, test databases are created on that server (and dropped
 * after); without it, an embedded Postgres is started in a temporary directory.
 * Integration test files each clone a migrated template database.
 */
import { spawn } from "node:child_process";
import { chmod, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { readdirSync } from "node:fs";
import pg from "pg";
import { embeddedDatabaseUrl, env } from "@/lib/env";
import { migrate, startEmbeddedPostgres } from "../scripts/database";
import { buildWorker } from "../scripts/worker-build";
import { freePort } from "./helpers/net";

const suites = ["unit", "integration", "e2e"] as const;
type Suite = (typeof suites)[number];

function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

async function admin<T>(serverUrl: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: withDatabase(serverUrl, "postgres") });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

function run(cmd: string, args: string[], extraEnv: Record<string, string>): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: "inherit", env: { ...process.env, ...extraEnv } });
    child.on("exit", (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

/** TEST_ONLY=<part of a file name> runs only the matching unit, integration and e2e files (while working on them). */
function testFiles(dir: string): string[] {
  const only = process.env.TEST_ONLY;
  return readdirSync(dir)
    .filter((f) => f.endsWith(".test.ts") && (!only || f.includes(only)))
    .sort()
    .map((f) => path.join(dir, f));
}

/**
 * node:test's arguments: its spec reporter on the terminal, and the failed tests
 * alone into a file of their own, printed again once every suite has run.
 */
async function nodeTestArgs(suite: Suite, files: string[]): Promise<string[]> {
  const out = path.join(await mkdtemp(path.join(tmpdir(), `conveyor-${suite}-`)), "failures.txt");
  failureFiles.push({ suite, file: out });
  return [
    "--import",
    "tsx",
    "--test",
    "--test-reporter=spec",
    "--test-reporter-destination=stdout",
    `--test-reporter=${path.resolve("tests/helpers/failures-reporter.mjs")}`,
    `--test-reporter-destination=${out}`,
    ...files,
  ];
}
const failureFiles: { suite: Suite; file: string }[] = [];

async function main(): Promise<number> {
  const arg = process.argv[2];
  if (arg && !suites.includes(arg as Suite)) {
    console.error(`usage: npm test [-- ${suites.join("|")}]`);
    return 2;
  }
  const selected: Suite[] = arg ? [arg as Suite] : [...suites];
  const results: string[] = [];
  let failed = 0;

  if (selected.includes("unit")) {
    const code = await run(process.execPath, await nodeTestArgs("unit", testFiles("tests/unit")), {
      NODE_ENV: "test",
    });
    results.push(`unit: ${code === 0 ? "passed" : "FAILED"}`);
    if (code !== 0) failed++;
  }
  const needsDb = selected.some((s) => s !== "unit");
  if (!needsDb) return await report(results, failed);

  // A database server: the given one, or an embedded one of our own.
  const configured = env().DATABASE_URL;
  let serverUrl: string;
  let stopEmbedded = async () => {};
  if (configured) {
    serverUrl = configured;
  } else {
    const dir = await mkdtemp(path.join(tmpdir(), "conveyor-test-pg-"));
    // mkdtemp makes it 0700; as root, Postgres runs as another user who must reach the data dir.
    await chmod(dir, 0o755);
    const port = await freePort();
    console.log(`[test] starting embedded Postgres on port ${port}`);
    const cluster = await startEmbeddedPostgres(path.join(dir, "data"), port);
    serverUrl = embeddedDatabaseUrl("postgres", port, cluster.password);
    stopEmbedded = async () => {
      await cluster.stop().catch(() => {});
      await rm(dir, { recursive: true, force: true });
    };
  }
  const suffix = `${process.pid}`;
  const template = `conveyor_test_tpl_${suffix}`;
  const e2eDb = `conveyor_test_e2e_${suffix}`;
  const created: string[] = [];
  try {
    await admin(serverUrl, (c) => c.query(`CREATE DATABASE ${template}`));
    created.push(template);
    console.log(`[test] migrating template database ${template}`);
    await migrate(withDatabase(serverUrl, template));

    if (selected.includes("integration")) {
      // The worker processes the tests start run the bundle, as `npm start` does (tests/helpers/worker.ts).
      await buildWorker();
      const code = await run(process.execPath, await nodeTestArgs("integration", testFiles("tests/integration")), {
        NODE_ENV: "test",
        // Schedules in tests run every second (the default refuses crons closer than a minute).
        SCHEDULE_MIN_INTERVAL_SECONDS: "1",
        TEST_SERVER_URL: serverUrl,
        TEST_TEMPLATE_DB: template,
      });
      results.push(`integration: ${code === 0 ? "passed" : "FAILED"}`);
      if (code !== 0) failed++;
    }

    if (selected.includes("e2e")) {
      await admin(serverUrl, (c) => c.query(`CREATE DATABASE ${e2eDb} TEMPLATE ${template}`));
      created.push(e2eDb);
      const port = await freePort();
      const playwright = require.resolve("@playwright/test/cli");
      const only = process.env.TEST_ONLY;
      const code = await run(process.execPath, [playwright, "test", ...(only ? [only] : [])], {
        DATABASE_URL: withDatabase(serverUrl, e2eDb),
        PORT: String(port),
        AUTH_SECRET: "e2e-test-secret-not-for-production",
        // The e2e suite signs in as the demo accounts: a given database gets them only when asked,
        // and with the documented password only when asked (tests/e2e/helpers.ts DEMO_PASSWORD).
        CONVEYOR_DEMO: "1",
        // Schedules in the suite run every two seconds (the default refuses crons closer than a minute).
        SCHEDULE_MIN_INTERVAL_SECONDS: "1",
        CONVEYOR_DEMO_PASSWORD: "conveyor-demo",
        // The suite drives many requests per user on purpose (limits are tested in integration).
        RATE_LIMIT_READS_PER_MINUTE: "0",
        RATE_LIMIT_WRITES_PER_MINUTE: "0",
        RATE_LIMIT_ANON_PER_MINUTE: "0",
        METRICS_TOKEN: "e2e-metrics-token-not-for-production",
        // The overview's rollup, often enough for a test to see its own jobs counted.
        STATS_ROLLUP_MS: "2000",
        // Webhook specs deliver to a receiver on the loopback, and retries come in milliseconds.
        WEBHOOK_ALLOW_PRIVATE: "1",
        WEBHOOK_RETRY_SCALE: "0.001",
        CONVEYOR_DATA_DIR: path.join(tmpdir(), `conveyor-e2e-${suffix}`),
      });
      results.push(`e2e: ${code === 0 ? "passed" : "FAILED"}`);
      if (code !== 0) failed++;
    }
  } finally {
    await admin(serverUrl, async (c) => {
      for (const db of created.reverse()) await c.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`).catch(() => {});
    }).catch(() => {});
    await stopEmbedded();
  }
  return await report(results, failed);
}

/** The summary line, after the failed unit and integration tests (Playwright lists its own at its end). */
async function report(results: string[], failed: number): Promise<number> {
  for (const { suite, file } of failureFiles) {
    const text = (await readFile(file, "utf8").catch(() => "")).trim();
    if (text) console.log(`\n[test] failed in ${suite}:\n${text}`);
    await rm(path.dirname(file), { recursive: true, force: true });
  }
  console.log(`\n[test] ${results.join(" · ")}`);
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(`[test] ${err.stack ?? err.message}`);
    process.exit(1);
  },
);
