/**
 * Who is asking: a user (by session or API token) acting within one tenant,
 * or a platform admin. Every query in lib/ is scoped by a Principal.
 */
import { db } from "../db";
import { AppError, notFound } from "../errors";
import { isUuid } from "../ids";

export type Role = "member" | "operator";

export type Principal = {
  userId: string;
  email: string;
  /** The tenant the principal acts in; null for a platform admin without a membership. */
  tenantId: string | null;
  tenantSlug: string | null;
  role: Role | null;
  isPlatformAdmin: boolean;
  /** Set when the request was authenticated by an API token. */
  tokenId: string | null;
};

/** Builds the principal of a user in their first (or the named) tenant. Null if the user is gone. */
export async function loadUserPrincipal(
  userId: string,
  tokenId: string | null = null,
  tenantId?: string,
): Promise<Principal | null> {
  const user = await db().user.findUnique({
    where: { id: userId },
    include: {
      memberships: {
        where: tenantId ? { tenantId } : undefined,
        include: { tenant: true },
        orderBy: { createdAt: "asc" },
        take: 1,
      },
    },
  });
  if (!user) return null;
  const membership = user.memberships[0];
  if (tenantId && !membership) return null;
  return {
    userId: user.id,
    email: user.email,
    tenantId: membership?.tenantId ?? null,
    tenantSlug: membership?.tenant.slug ?? null,
    role: membership?.role ?? null,
    isPlatformAdmin: user.isPlatformAdmin,
    tokenId,
  };
}

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
