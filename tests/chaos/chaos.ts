/**
 * npm run chaos [-- --jobs 2000 --workers 4 --concurrency 4 --kill-every 1500 --terminate-every 700]
 * Runs the chaos harness on a fresh database (on DATABASE_URL's server, or the
 * embedded Postgres) and exits non-zero when a check fails.
 */
import { parseArgs } from "node:util";
import { seed } from "../../prisma/seed";
import { withScratchDatabase } from "../../scripts/database";
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
  return withScratchDatabase("conveyor_chaos", async ({ url }) => {
    const tenants = await seed(0.001);
    const report = await runChaos({
      databaseUrl: url,
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
  });
}

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(err.stack ?? err.message);
    process.exit(1);
  },
);
