// PUT /api/v1/ops/queues/{queue}/tenants/{tenant} – a tenant's cap and weight (platform admins); DELETE – back to defaults
import { clearTenantLimit, setTenantLimit } from "@/lib/admission/queues";
import { readJson, withPrincipal } from "@/lib/http/route";

type Params = { queue: string; tenant: string };

export const PUT = withPrincipal<Params>(async (req, principal, { queue, tenant }) =>
  Response.json(await setTenantLimit(principal, queue, tenant, await readJson(req))),
);

export const DELETE = withPrincipal<Params>(async (_req, principal, { queue, tenant }) =>
  Response.json(await clearTenantLimit(principal, queue, tenant)),
);
