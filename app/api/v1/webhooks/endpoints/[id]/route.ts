// GET /api/v1/webhooks/endpoints/{id} – one endpoint with its health
// PATCH – { url?, events?, description?, rateLimitPerSecond?, disabled? }; re-enabling resets its circuit
// DELETE – deletes it; its waiting deliveries are cancelled; 204
import { readJson, withPrincipal } from "@/lib/http/route";
import { deleteEndpoint, getEndpoint, updateEndpoint } from "@/lib/webhooks/service";

export const GET = withPrincipal<{ id: string }>(async (_req, principal, { id }) =>
  Response.json(await getEndpoint(principal, id)),
);

export const PATCH = withPrincipal<{ id: string }>(async (req, principal, { id }) =>
  Response.json(await updateEndpoint(principal, id, await readJson(req))),
);

export const DELETE = withPrincipal<{ id: string }>(async (_req, principal, { id }) => {
  await deleteEndpoint(principal, id);
  return new Response(null, { status: 204 });
});
