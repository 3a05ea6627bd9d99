/** The webhooks workload's job kind: a delivery, members' webhooks page and the console's. */
import type { JobKind } from "./types";

export const webhookKind: JobKind = {
  name: "webhooks",
  nav: [
    // A member's endpoints and their failed deliveries, one click from anywhere (not only under Settings).
    { href: "/settings/webhooks", label: "Webhooks", for: "members", area: "user" },
    // Platform admins belong to no tenant: every tenant's endpoints, in the console. Operators of a
    // tenant see theirs under the members' entry (the same endpoints), so no second "Webhooks".
    { href: "/ops/webhooks", label: "Webhooks", for: "admins", area: "console" },
  ],
  types: {
    // Its requests follow the delivery's own schedule (docs/WEBHOOKS.md); the engine's budget only bounds crashes and deferrals.
    webhook_delivery: { title: () => "Webhook delivery", unboundedAttempts: true },
  },
};
