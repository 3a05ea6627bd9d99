/** The webhooks workload's job kind: a delivery, and the console's webhooks page. */
import type { JobKind } from "./types";

export const webhookKind: JobKind = {
  name: "webhooks",
  nav: [{ href: "/ops/webhooks", label: "Webhooks", for: "operators", area: "console" }],
  types: {
    // Its requests follow the delivery's own schedule (docs/WEBHOOKS.md); the engine's budget only bounds crashes and deferrals.
    webhook_delivery: { title: () => "Webhook delivery", unboundedAttempts: true },
  },
};
