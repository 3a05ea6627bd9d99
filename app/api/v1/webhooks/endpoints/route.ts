// GET /api/v1/webhooks/endpoints – the tenant's endpoints with their health (a platform admin: all, ?tenant=<slug>)
// POST /api/v1/webhooks/endpoints – { url, events, description?, rateLimitPerSecond? }; 201 with the endpoint
//   and its secret (whsec_…), shown this once
import { queryObject, readJson, withPrincipal } from "@/lib/http/route";
import { createEndpoint, listEndpoints } from "@/lib/webhooks/service";

export const GET = withPrincipal(async (req, principal) =>
  Response.json({ endpoints: await listEndpoints(principal, queryObject(req)) }),
);

export const POST = withPrincipal(async (req, principal) => {
  const created = await createEndpoint(principal, await readJson(req));
  return Response.json(created, {
    status: 201,
    headers: { Location: `/api/v1/webhooks/endpoints/${created.endpoint.id}` },
  });
});
