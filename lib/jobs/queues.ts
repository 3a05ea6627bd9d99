/**
 * The engine's own queues, which every workload may use: interactive (somebody is
 * waiting: their own export request) and bulk (export parts, schedules' runs, replays).
 * A workload that needs a pool of its own brings its queue in its manifest (webhooks:
 * deliveries to tenants' endpoints, so a slow endpoint never takes an export's slot);
 * the registry lists them all (`queues()`, `queueNames()`).
 */
import { env } from "../env";
import type { QueueSpec } from "./task";

export const engineQueues: readonly QueueSpec[] = [
  {
    name: "interactive",
    description: "somebody is waiting for it (their own request)",
    tenantCap: () => env().QUEUE_INTERACTIVE_TENANT_CAP,
    window: () => env().QUEUE_INTERACTIVE_WINDOW,
    health: { oldestReadyAge: { warning: 10, behind: 60 }, startLatencyP95: { warning: 5, behind: 30 } },
  },
  {
    name: "bulk",
    description: "background work that may queue for minutes (export parts, schedules' runs, replays)",
    tenantCap: () => env().QUEUE_BULK_TENANT_CAP,
    window: () => env().QUEUE_BULK_WINDOW,
    health: { oldestReadyAge: { warning: 300, behind: 1800 }, startLatencyP95: { warning: 120, behind: 900 } },
  },
];
