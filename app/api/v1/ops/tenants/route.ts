// GET /api/v1/ops/tenants – every tenant with its export retention (platform admins)
import { listTenants } from "@/lib/tenants/settings";
import { withPrincipal } from "@/lib/http/route";

export const GET = withPrincipal(async (_req, principal) => Response.json({ tenants: await listTenants(principal) }));
