/**
 * The webhooks workload: signed deliveries of tenants' events to their
 * endpoints (docs/WEBHOOKS.md). Deliveries parked behind a busy endpoint are
 * woken by the engine's downstream sweeper (lib/downstream/sweeper.ts).
 */
import { defineWorkload } from "../jobs/task";
import { webhooksApi } from "./openapi";
import { deliveryTask } from "./task";

export const webhooksWorkload = defineWorkload({
  name: "webhooks",
  openapi: webhooksApi,
  tasks: [deliveryTask],
});
