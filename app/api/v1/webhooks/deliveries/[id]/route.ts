// GET /api/v1/webhooks/deliveries/{id} – one delivery: the message sent and every request with its answer
import { withPrincipal } from "@/lib/http/route";
import { getDelivery } from "@/lib/webhooks/service";

export const GET = withPrincipal<{ id: string }>(async (_req, principal, { id }) =>
  Response.json(await getDelivery(principal, id)),
);
