// GET /api/v1/tokens – the caller's API tokens; POST – create one (the secret is shown once)
import { createApiToken, listApiTokens } from "@/lib/auth/tokens";
import { readJson, withPrincipal } from "@/lib/http/route";

export const GET = withPrincipal(async (_req, principal) => Response.json({ tokens: await listApiTokens(principal) }));

export const POST = withPrincipal(async (req, principal) => {
  const created = await createApiToken(principal, await readJson(req));
  return Response.json(created, { status: 201 });
});
