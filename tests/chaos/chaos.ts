/**
 * npm run chaos [-- --jobs 2000 --workers 4 --concurrency 4 --kill-every 1500 --terminate-every 700]
 * Runs the chaos harness on a fresh database (on DATABASE_URL's server, or the
 * embedded Postgres) and exits non-zero when a check fails.
 */
import { parseArgs } from "node:util";
import pg from "pg";
import { closeDb } from "@/lib/db";
import { resetEnvCache } from "@/lib/env";
import { seed } from "../../prisma/seed";
import { migrate, openDatabase } from "../../scripts/database";
import { formatReport, runChaos } from "./harness";

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      jobs: { type: "string", default: "2000" },
      workers: { type: "string", default: "4" },
      concurrency: { type: "string", default: "4" },
      "kill-every": { type: "string", default: "1500" },
      "terminate-every": { type: "string", default: "700" },
      "max-sleep": { type: "string", default: "100" },
      poison: { type: "string", default: "1" },
    },
  });
  const database = await openDatabase(() => {});
  const name = `conveyor_chaos_${process.pid}`;
  const admin = new URL(database.url);
  admin.pathname = "/postgres";
  const adminClient = new pg.Client({ connectionString: admin.toString() });
  await adminClient.connect();
  await adminClient.query(`CREATE DATABASE ${name}`);
  const url = new URL(database.url);
  url.pathname = `/${name}`;
  process.env.DATABASE_URL = url.toString();
  resetEnvCache();
  try {
    await migrate(url.toString());
    const tenants = await seed(0.001);
    const report = await runChaos({
      databaseUrl: url.toString(),
      tenantId: tenants.get("acme")!,
      jobs: Number(values.jobs),
      workers: Number(values.workers),
      concurrency: Number(values.concurrency),
      killEveryMs: Number(values["kill-every"]),
      terminateEveryMs: Number(values["terminate-every"]),
      maxSleepMs: Number(values["max-sleep"]),
      poisonJobs: Number(values.poison),
      timeoutMs: 15 * 60_000,
      log: console.log,
    });
    console.log(`\n${formatReport(report)}`);
    return report.ok ? 0 : 1;
  } finally {
    await closeDb();
    await adminClient.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
    await adminClient.end();
    await database.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(err.stack ?? err.message);
    process.exit(1);
  },
);
