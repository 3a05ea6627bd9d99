// GET /api/v1/openapi.json – the OpenAPI 3.1 description of this API (no sign-in; cacheable)
import { publicRoute } from "@/lib/http/route";
import { openApiDocument } from "@/lib/openapi/document";

export const GET = publicRoute(async () =>
  Response.json(openApiDocument(), {
    // The same for every caller; it changes only with a deploy.
    headers: { "Cache-Control": "public, max-age=300" },
  }),
);
