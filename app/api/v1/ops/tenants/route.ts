// GET /api/v1/ops/tenants – every tenant with its retention and quotas; POST – create a tenant { slug, name } (platform admins)
import { createTenant, listTenants } from "@/lib/tenants/settings";
import { readJson, withPrincipal } from "@/lib/http/route";

export const GET = withPrincipal(async (_req, principal) => Response.json({ tenants: await listTenants(principal) }));

export const POST = withPrincipal(async (req, principal) =>
  Response.json(await createTenant(principal, await readJson(req)), { status: 201 }),
);
