// GET /api/v1/webhooks/endpoints/{id}/deliveries – newest first; ?status=pending|delivered|failed|cancelled,
// ?limit (≤ 100), ?cursor (from nextCursor)
import { queryObject, withPrincipal } from "@/lib/http/route";
import { listDeliveries } from "@/lib/webhooks/service";

export const GET = withPrincipal<{ id: string }>(async (req, principal, { id }) =>
  Response.json(await listDeliveries(principal, id, queryObject(req))),
);
