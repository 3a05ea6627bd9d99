// POST /api/v1/webhooks/endpoints/{id}/recover – { since }: replays every failed delivery created since then
// (each keeps its webhook-id); 202 with how many
import { readJson, withPrincipal } from "@/lib/http/route";
import { recoverEndpoint } from "@/lib/webhooks/service";

export const POST = withPrincipal<{ id: string }>(async (req, principal, { id }) =>
  Response.json(await recoverEndpoint(principal, id, await readJson(req)), { status: 202 }),
);
