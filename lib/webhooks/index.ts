/**
 * The webhooks workload: signed deliveries of tenants' events to their
 * endpoints (docs/WEBHOOKS.md). Its manifest: its own queue (a slow endpoint
 * never takes an export's slot), settings, tables, CLI commands. Deliveries parked behind a
 * busy endpoint are woken by the engine's downstream sweeper (lib/downstream/sweeper.ts).
 */
import { defineWorkload } from "../jobs/task";
import { webhooksCommands } from "./cli";
import { webhookSettings } from "./settings";
import { pruneWebhookMessages } from "./sql/prune-webhook-messages";
import { webhooksApi } from "./openapi";
import { deliveryTask } from "./task";

export const webhooksWorkload = defineWorkload({
  name: "webhooks",
  openapi: webhooksApi,
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
  tables: [{ name: "webhook_deliveries" }],
  // Messages with no delivery left (their deliveries went with their jobs).
  history: [{ name: "webhook_messages", prune: pruneWebhookMessages }],
  cli: webhooksCommands,
  // A user owns the deliveries to the endpoints they made (each replay's job carries the delivery's id).
  ownedJobs: (userId) =>
    `j.type = '${deliveryTask.type}' AND EXISTS (SELECT 1 FROM webhook_deliveries d
       JOIN webhook_endpoints e ON e.id = d.endpoint_id
      WHERE d.id = (j.input->>'deliveryId')::uuid AND e.created_by_id = ${userId})`,
});
