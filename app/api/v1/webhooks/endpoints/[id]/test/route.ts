// POST /api/v1/webhooks/endpoints/{id}/test – sends a `ping` event to this endpoint; 202 with its delivery
import { withPrincipal } from "@/lib/http/route";
import { sendTestEvent } from "@/lib/webhooks/service";

export const POST = withPrincipal<{ id: string }>(async (_req, principal, { id }) =>
  Response.json(await sendTestEvent(principal, id), { status: 202 }),
);
