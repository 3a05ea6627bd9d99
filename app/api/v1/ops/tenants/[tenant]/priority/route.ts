// GET /api/v1/ops/tenants/{tenant}/priority – the highest priority the tenant's callers may ask for (its members, operators, platform admins)
// PUT /api/v1/ops/tenants/{tenant}/priority – sets it (operators of the tenant, platform admins; audited)
import { getTenantPriority, setTenantPriority } from "@/lib/jobs/priority";
import { readJson, withPrincipal } from "@/lib/http/route";

export const GET = withPrincipal<{ tenant: string }>(async (_req, principal, { tenant }) =>
  Response.json(await getTenantPriority(principal, tenant)),
);

export const PUT = withPrincipal<{ tenant: string }>(async (req, principal, { tenant }) =>
  Response.json(await setTenantPriority(principal, tenant, await readJson(req))),
);
