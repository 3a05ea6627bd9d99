// PATCH /api/v1/ops/tenants/{tenant} – a tenant's settings: export, job, dead-letter and audit retention (days), quotas (platform admins)
import { updateTenantSettings } from "@/lib/tenants/settings";
import { readJson, withPrincipal } from "@/lib/http/route";

export const PATCH = withPrincipal<{ tenant: string }>(async (req, principal, { tenant }) =>
  Response.json(await updateTenantSettings(principal, tenant, await readJson(req))),
);
