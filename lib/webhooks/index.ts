/**
 * The webhooks workload: signed deliveries of tenants' events to their
 * endpoints (docs/WEBHOOKS.md). Its manifest: its own queue (a slow endpoint
 * never takes an export's slot), settings, tables, CLI commands, and the upkeep
 * that wakes deliveries a lost wake-up left parked behind a busy endpoint
 * (lib/downstream).
 */
import { sweepWaiters } from "../downstream";
import { defineWorkload } from "../jobs/task";
import { loop } from "../runtime/service";
import { webhooksCommands } from "./cli";
import { webhookSettings } from "./settings";
import { pruneWebhookMessages } from "./sql/prune-webhook-messages";
import { deliveryTask } from "./task";

export const webhooksWorkload = defineWorkload({
  name: "webhooks",
  tasks: [deliveryTask],
  queues: [
    {
      name: "webhooks",
      description: "deliveries to tenants' endpoints (a pool of their own: they mostly wait on the network)",
      tenantCap: () => webhookSettings().QUEUE_WEBHOOKS_TENANT_CAP,
      window: () => webhookSettings().QUEUE_WEBHOOKS_WINDOW,
      health: { oldestReadyAge: { warning: 60, behind: 600 }, startLatencyP95: { warning: 30, behind: 300 } },
      concurrency: () => webhookSettings().WEBHOOK_CONCURRENCY,
    },
  ],
  settings: webhookSettings,
  services: [
    loop({
      name: "downstream",
      everyMs: () => 1_000,
      async run() {
        const n = await sweepWaiters();
        return n ? [`woke ${n} parked deliveries`] : [];
      },
    }),
  ],
  tables: [{ name: "webhook_deliveries" }],
  // Messages with no delivery left (their deliveries went with their jobs).
  history: [{ name: "webhook_messages", prune: pruneWebhookMessages }],
  cli: webhooksCommands,
});
