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
  /** What the token may do (`read`: GET and streams; `write`: the rest); null for a browser session (everything). */
  scopes: TokenScope[] | null;
  /** A browser session's sign-in time (ms; 0 when unknown): a password changed after it ends the session and its streams. */
  authAt?: number;
  /**
   * Until when (ms since the epoch) this principal's console reads go to the primary, not the read
   * replica: set from a request's read-your-writes cookie (lib/http/read-window.ts), and by the CLI.
   */
  readPrimaryUntil?: number;
};

export const tokenScopes = ["read", "write"] as const;
export type TokenScope = (typeof tokenScopes)[number];

/** Builds the principal of a user in their first (or the named) tenant. Null if the user is gone. */
export async function loadUserPrincipal(
  userId: string,
  tokenId: string | null = null,
  tenantId?: string,
  scopes: TokenScope[] | null = null,
): Promise<Principal | null> {
  return (await loadUser(userId, tokenId, tenantId, scopes))?.principal ?? null;
}

/** The principal and when the user's password last changed, in one query. */
async function loadUser(
  userId: string,
  tokenId: string | null,
  tenantId: string | undefined,
  scopes: TokenScope[] | null,
): Promise<{ principal: Principal; passwordChangedAt: Date | null } | null> {
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
  const principal: Principal = {
    userId: user.id,
    email: user.email,
    tenantId: membership?.tenantId ?? null,
    tenantSlug: membership?.tenant.slug ?? null,
    role: membership?.role ?? null,
    isPlatformAdmin: user.isPlatformAdmin,
    tokenId,
    scopes,
  };
  return { principal, passwordChangedAt: user.passwordChangedAt };
}

/** Whether a session that signed in at `authAt` (ms) predates the password's latest change. */
const predatesPasswordChange = (authAt: number | undefined, changedAt: Date | null) =>
  changedAt !== null && (authAt === undefined || authAt < changedAt.getTime());

/**
 * The principal as it is now: null once its token was revoked or expired, its
 * membership removed, its user deleted, or (a browser session) its user's
 * password changed since it signed in (long-lived streams re-check this).
 */
export async function reloadPrincipal(p: Principal): Promise<Principal | null> {
  if (p.tokenId) {
    const [token] = await db().$queryRaw<{ userId: string; tenantId: string | null; scopes: TokenScope[] }[]>`
      SELECT user_id AS "userId", tenant_id AS "tenantId", scopes FROM api_tokens
      WHERE id = ${p.tokenId}::uuid AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`;
    if (!token) return null;
    const again = await loadUserPrincipal(token.userId, p.tokenId, token.tenantId ?? undefined, token.scopes);
    if (again && token.tenantId === null && !again.isPlatformAdmin) return null;
    return again;
  }
  const loaded = await loadUser(p.userId, null, p.tenantId ?? undefined, null);
  if (!loaded) return null;
  const again = loaded.principal;
  // A session that acted in a tenant must still belong to it; a platform admin must still be one.
  if ((p.tenantId && again.tenantId !== p.tenantId) || (p.isPlatformAdmin && !again.isPlatformAdmin)) {
    return null;
  }
  if (p.authAt !== undefined) {
    if (predatesPasswordChange(p.authAt, loaded.passwordChangedAt)) return null;
    return { ...again, authAt: p.authAt };
  }
  return again;
}

/**
 * The principal of a browser session that signed in at `authAt` (ms): null when
 * the user's password changed since (every other session of theirs ends).
 */
export async function loadSessionPrincipal(userId: string, authAt: number | undefined): Promise<Principal | null> {
  const [user] = await db().$queryRaw<{ changedAt: Date | null }[]>`
    SELECT password_changed_at AS "changedAt" FROM users WHERE id = ${userId}::uuid`;
  if (!user) return null;
  if (predatesPasswordChange(authAt, user.changedAt)) return null;
  const principal = await loadUserPrincipal(userId);
  return principal && { ...principal, authAt: authAt ?? 0 };
}
