// POST /api/v1/webhooks/deliveries/{id}/replay – sends the message again (same webhook-id, a fresh retry
// schedule); 202; 409 while the delivery is still under way
import { withPrincipal } from "@/lib/http/route";
import { replayDelivery } from "@/lib/webhooks/service";

export const POST = withPrincipal<{ id: string }>(async (_req, principal, { id }) =>
  Response.json(await replayDelivery(principal, id), { status: 202 }),
);
