/**
 * The webhooks workload: signed deliveries of tenants' events to their
 * endpoints (docs/WEBHOOKS.md). Its upkeep wakes deliveries a lost wake-up left
 * parked behind a busy endpoint (lib/downstream).
 */
import { sweepWaiters } from "../downstream";
import { defineWorkload } from "../jobs/task";
import { webhooksApi } from "./openapi";
import { deliveryTask } from "./task";

export const webhooksWorkload = defineWorkload({
  name: "webhooks",
  openapi: webhooksApi,
  tasks: [deliveryTask],
  periodic: [
    {
      name: "downstream",
      everyMs: () => 1_000,
      async run() {
        const n = await sweepWaiters();
        return n ? [`woke ${n} parked deliveries`] : [];
      },
    },
  ],
});
