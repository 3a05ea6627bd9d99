/**
 * Who is asking: a user (by session or API token) acting within one tenant,
 * or a platform admin. Every query in lib/ is scoped by a Principal.
 */
import { db } from "../db";

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
