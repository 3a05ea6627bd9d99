/**
 * npm run chaos [-- --jobs 2000 --workers 4 --concurrency 4 --kill-every 1500 --terminate-every 700]
 *               [-- --exports 4 --part-rows 60000 --segment-rows 2000 --export-workers 3 --scale 0.2]
 * Runs the chaos harness on a fresh database (on DATABASE_URL's server, or the
 * embedded Postgres), then the export chaos (workers SIGKILLed mid-file:
 * ./exports-harness.ts; `--exports 0` skips it) on another, and exits non-zero
 * when a check fails.
 */
import { parseArgs } from "node:util";
import { seed } from "../../prisma/seed";
import { withScratchDatabase } from "../../scripts/database";
import { exportChaos, exportChaosOptions } from "./exports-harness";
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
      ...exportChaosOptions,
    },
  });
  const probes = await withScratchDatabase("conveyor_chaos", async ({ url }) => {
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
    return report.ok;
  });
  if (Number(values.exports) === 0) return probes ? 0 : 1;
  console.log("\n[chaos] exports: workers SIGKILLed while a file is half written");
  const exports = await exportChaos(values);
  return probes && exports ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(err.stack ?? err.message);
    process.exit(1);
  },
);
