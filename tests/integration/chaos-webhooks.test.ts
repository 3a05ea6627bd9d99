import { test } from "node:test";
import assert from "node:assert/strict";
import { formatWebhookReport, runWebhookChaos } from "../chaos/webhooks-harness";
import { useTestDatabase } from "../helpers/db";

const fx = useTestDatabase({ seed: 0.001 });

test("webhook chaos, short: 300 messages on 2 workers SIGKILLed while they send — each delivered at least once, duplicates with the same webhook-id", async () => {
  const report = await runWebhookChaos({
    databaseUrl: fx.database.url,
    tenantId: fx.p.acmeId,
    messages: 300,
    workers: 2,
    concurrency: 8,
    killEveryMs: 1_000,
    timeoutMs: 90_000,
    log: () => {},
  });
  console.log(formatWebhookReport(report));
  assert.ok(report.kills >= 1, "at least one worker was SIGKILLed");
  for (const c of report.checks) assert.ok(c.ok, `${c.name}: ${c.detail}`);
});
