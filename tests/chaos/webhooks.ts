/**
 * npm run chaos:webhooks [-- --messages 3000 --workers 3 --kill-every 1500]
 * Runs the webhook chaos harness on a fresh database (on DATABASE_URL's
 * server, or the embedded Postgres); exits non-zero when a check fails.
 */
import { parseArgs } from "node:util";
import { withScratchDatabase } from "../../scripts/database";
import { seedDemo } from "../helpers/fixtures";
import { formatWebhookReport, runWebhookChaos } from "./webhooks-harness";

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      messages: { type: "string", default: "3000" },
      workers: { type: "string", default: "3" },
      concurrency: { type: "string", default: "8" },
      "kill-every": { type: "string", default: "1500" },
    },
  });
  return withScratchDatabase("conveyor_chaos_webhooks", async ({ url }) => {
    const p = await seedDemo(0.001);
    const report = await runWebhookChaos({
      databaseUrl: url,
      tenantId: p.acmeId,
      messages: Number(values.messages),
      workers: Number(values.workers),
      concurrency: Number(values.concurrency),
      killEveryMs: Number(values["kill-every"]),
      timeoutMs: 300_000,
      log: console.log,
    });
    console.log(`\n${formatWebhookReport(report)}`);
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
