/**
 * API tokens: random secrets shown once, stored as sha256 hashes.
 * A token acts as its user within the token's tenant.
 */
import { createHash, randomBytes } from "node:crypto";
import { z } from "zod";
import { recordAudit } from "../audit";
import { db } from "../db";
import { AppError, notFound, parseOrThrow } from "../errors";
import { requireTenant } from "./authorize";
import { loadUserPrincipal, type Principal } from "./principal";

const TOKEN_PREFIX = "cvy_";

export const createTokenSchema = z.object({
  name: z.string().trim().min(1, "name is required").max(100),
});

export type TokenDto = { id: string; name: string; prefix: string; createdAt: string; lastUsedAt: string | null };

function hashToken(secret: string): string {
  return createHash("sha256").update(secret).digest("hex");
}

/**
 * Creates a token for the principal's user and tenant (a platform admin without
 * a membership gets one without a tenant). The secret is returned once and never stored.
 */
export async function createApiToken(
  principal: Principal,
  body: unknown,
): Promise<{ token: string; record: TokenDto }> {
  const { name } = parseOrThrow(createTokenSchema, body);
  // A token acts in its tenant; a platform admin's may have none (it acts as the admin).
  const tenantId = principal.isPlatformAdmin ? principal.tenantId : requireTenant(principal);
  const secret = TOKEN_PREFIX + randomBytes(32).toString("base64url");
  const row = await db().$transaction(async (tx) => {
    const created = await tx.apiToken.create({
      data: { userId: principal.userId, tenantId, name, tokenHash: hashToken(secret), prefix: secret.slice(0, 10) },
    });
    await recordAudit(
      principal,
      { action: "token.create", targetType: "api_token", targetIds: [created.id], details: { name } },
      tx,
    );
    return created;
  });
  return { token: secret, record: toTokenDto(row) };
}

/** Creates a token for a user by e-mail (the CLI). */
export async function createApiTokenForEmail(email: string, name: string, tenantSlug?: string): Promise<string> {
  const user = await db().user.findUnique({ where: { email } });
  if (!user) throw new AppError("not_found", `No user with e-mail ${email}`);
  const tenant = tenantSlug ? await db().tenant.findUnique({ where: { slug: tenantSlug } }) : null;
  if (tenantSlug && !tenant) throw new AppError("not_found", `No tenant ${tenantSlug}`);
  const principal = await loadUserPrincipal(user.id, null, tenant?.id);
  if (!principal) throw new AppError("not_found", `${email} is not a member of ${tenantSlug}`);
  return (await createApiToken(principal, { name })).token;
}

/** The principal behind a bearer secret, or null if unknown or revoked. */
export async function principalFromToken(secret: string): Promise<Principal | null> {
  if (!secret.startsWith(TOKEN_PREFIX)) return null;
  const row = await db().apiToken.findUnique({ where: { tokenHash: hashToken(secret) } });
  if (!row || row.revokedAt) return null;
  // Best effort and off the request's critical path.
  void db()
    .apiToken.update({ where: { id: row.id }, data: { lastUsedAt: new Date() } })
    .catch(() => {});
  const principal = await loadUserPrincipal(row.userId, row.id, row.tenantId ?? undefined);
  // A tenantless token is a platform admin's: it dies with the role (it never
  // falls back to some membership the user gained since).
  if (principal && row.tenantId === null && !principal.isPlatformAdmin) return null;
  return principal;
}

/** The principal's own live tokens. */
export async function listApiTokens(principal: Principal): Promise<TokenDto[]> {
  const rows = await db().apiToken.findMany({
    where: { userId: principal.userId, revokedAt: null },
    orderBy: { createdAt: "desc" },
  });
  return rows.map(toTokenDto);
}

/** Revokes one of the principal's own tokens; another user's token answers 404. */
export async function revokeApiToken(principal: Principal, id: string): Promise<void> {
  await db().$transaction(async (tx) => {
    const { count } = await tx.apiToken.updateMany({
      where: { id, userId: principal.userId, revokedAt: null },
      data: { revokedAt: new Date() },
    });
    if (count === 0) throw notFound("Token not found");
    await recordAudit(principal, { action: "token.revoke", targetType: "api_token", targetIds: [id] }, tx);
  });
}

function toTokenDto(row: {
  id: string;
  name: string;
  prefix: string;
  createdAt: Date;
  lastUsedAt: Date | null;
}): TokenDto {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    createdAt: row.createdAt.toISOString(),
    lastUsedAt: row.lastUsedAt?.toISOString() ?? null,
  };
}
