/**
 * Authorization: what a principal may see and do. Every lib/ function that
 * reads or changes tenant data goes through these; the UI only hides what
 * they would refuse anyway.
 */
import { db } from "../db";
import { AppError, notFound } from "../errors";
import { isUuid } from "../ids";
import type { Principal } from "./principal";

/** The tenant a principal acts in, or a 403 saying it needs one (platform admins without membership). */
export function requireTenant(principal: Principal): string {
  if (!principal.tenantId) {
    throw new AppError(
      "forbidden",
      "This action needs a tenant membership; platform admins act on tenants from the console",
    );
  }
  return principal.tenantId;
}

/**
 * Prisma `where` fragment limiting rows to what a principal may see:
 * its tenant, or everything for a platform admin.
 */
export function tenantScope(principal: Principal): { tenantId?: string } {
  if (principal.isPlatformAdmin) return {};
  return { tenantId: principal.tenantId ?? "00000000-0000-0000-0000-000000000000" };
}

/**
 * The tenant a principal may name: an operator only their own (another answers
 * 404, as if it did not exist), a platform admin any. `ref` is an id or a slug.
 */
export async function resolveTenantFor(principal: Principal, ref: string | null | undefined): Promise<string | null> {
  if (!principal.isPlatformAdmin) {
    const own = requireTenant(principal);
    if (ref == null || ref === own || ref === principal.tenantSlug) return own;
    throw notFound("Tenant not found");
  }
  if (ref == null) return null;
  const tenant = await db().tenant.findFirst({
    where: isUuid(ref) ? { OR: [{ id: ref }, { slug: ref }] } : { slug: ref },
    select: { id: true },
  });
  if (!tenant) throw notFound("Tenant not found");
  return tenant.id;
}

/** A 403 unless the principal is a platform admin. */
export function requirePlatformAdmin(principal: Principal, what = "This action"): void {
  if (!principal.isPlatformAdmin) throw new AppError("forbidden", `${what} is for platform admins`);
}

/** Operators act on their tenant's work; platform admins on everyone's. */
export function isOperator(principal: Principal): boolean {
  return principal.isPlatformAdmin || principal.role === "operator";
}

/** A token without the scope the request needs (a read-only token writing) is refused. */
export function requireScope(principal: Principal, scope: "read" | "write"): void {
  if (principal.scopes && !principal.scopes.includes(scope)) {
    throw new AppError(
      "forbidden",
      `This API token is limited to ${principal.scopes.join(", ")}; this request needs ${scope}`,
    );
  }
}

/** Only a person signed in in the browser manages credentials (a token cannot make or revoke tokens). */
export function requireBrowserSession(principal: Principal, what: string): void {
  if (principal.tokenId) throw new AppError("forbidden", `${what} needs a signed-in browser session, not an API token`);
}

/** Operators act on their tenant's queues; platform admins everywhere; members may not. */
export function requireOperator(principal: Principal): void {
  if (!isOperator(principal)) throw new AppError("forbidden", "This action needs the operator role");
}
