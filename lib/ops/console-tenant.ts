/** Which tenant a console query covers (lib/ops/console.ts, lib/ops/stuck.ts, lib/ops/stats.ts). */
import { z } from "zod";
import { requireOperator, resolveTenantFor } from "../auth/authorize";
import type { Principal } from "../auth/principal";

/** The tenant a console query covers: the operator's own, or (admins) the named one or all. */
export async function consoleTenant(principal: Principal, tenant: string | undefined): Promise<string | null> {
  requireOperator(principal);
  return resolveTenantFor(principal, tenant);
}

export const tenantParam = z.string().trim().min(1).max(100).optional();
