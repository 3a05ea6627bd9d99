/**
 * npm run chaos [-- --jobs 2000 --workers 4 --concurrency 4 --kill-every 1500 --terminate-every 700]
 *               [-- --exports 4 --part-rows 60000 --segment-rows 2000 --export-workers 3 --scale 0.2]
 * Runs the chaos harness on a fresh database (on DATABASE_URL's server, or the
 * embedded Postgres), then the export chaos (workers SIGKILLed mid-file:
 * ./exports-harness.ts; `--exports 0` skips it) on another, and exits non-zero
 * when a check fails. `--pgbouncer`: the workers' DATABASE_URL goes through a PgBouncer in transaction
 * pooling mode (Debian's, tests/helpers/pgbouncer.ts) and DATABASE_DIRECT_URL straight to Postgres,
 * nothing else set (each worker's start-up probe finds the pooler: lib/pooler.ts); the checks are the same.
 */
import { parseArgs } from "node:util";
import { seed } from "../../prisma/seed";
import { withScratchDatabase } from "../../scripts/database";
import { exportChaos, exportChaosOptions } from "./exports-harness";
import { startPgBouncer } from "../helpers/pgbouncer";
import { formatReport, runChaos } from "./harness";

const options = {
  jobs: { type: "string", default: "2000" },
  workers: { type: "string", default: "4" },
  concurrency: { type: "string", default: "4" },
  "kill-every": { type: "string", default: "1500" },
  "terminate-every": { type: "string", default: "700" },
  "max-sleep": { type: "string", default: "100" },
  poison: { type: "string", default: "1" },
  pgbouncer: { type: "boolean", default: false },
  ...exportChaosOptions,
} as const;
type Values = ReturnType<typeof parseArgs<{ options: typeof options }>>["values"];

async function main(): Promise<number> {
  const { values } = parseArgs({ options });
  return await chaos(values, values.pgbouncer ? throughPgBouncer : undefined);
}

/**
 * Runs `run` with a PgBouncer before the Postgres server that `directUrl` names (each scratch
 * database may be on a newly started embedded server, on a port of its own).
 */
async function throughPgBouncer<T>(directUrl: string, run: (pooledUrl: string) => Promise<T>): Promise<T> {
  const bouncer = await startPgBouncer(directUrl);
  console.log(`[chaos] the workers' DATABASE_URL through PgBouncer on port ${bouncer.port}`);
  try {
    return await run(bouncer.urlFor(directUrl));
  } finally {
    await bouncer.stop();
  }
}

async function chaos(values: Values, pooled: typeof throughPgBouncer | undefined): Promise<number> {
  const probes = await withScratchDatabase("conveyor_chaos", async ({ url }) => {
    const tenants = await seed(0.001);
    const run = (pooledUrl: string | undefined) =>
      runChaos({
        databaseUrl: url,
        pooledUrl,
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
    const report = pooled ? await pooled(url, run) : await run(undefined);
    console.log(`\n${formatReport(report)}`);
    return report.ok;
  });
  if (Number(values.exports) === 0) return probes ? 0 : 1;
  console.log("\n[chaos] exports: workers SIGKILLed while a file is half written");
  const exports = await exportChaos(values, pooled);
  return probes && exports ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(err.stack ?? err.message);
    process.exit(1);
  },
);
