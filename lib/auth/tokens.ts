/**
 * API tokens: random secrets shown once, stored as sha256 hashes.
 * A token acts as its user within the token's tenant.
 */
import { createHash, randomBytes } from "node:crypto";
import { z } from "zod";
import { recordAudit } from "../audit";
import { db } from "../db";
import { AppError, notFound, parseOrThrow } from "../errors";
import { isUuid } from "../ids";
import { requireBrowserSession, requireTenant } from "./authorize";
import { loadUserPrincipal, tokenScopes, type Principal, type TokenScope } from "./principal";

const TOKEN_PREFIX = "cvy_";

export const createTokenSchema = z
  .object({
    name: z.string().trim().min(1, "name is required").max(100, "must be at most 100 characters"),
    /** `read` (GET and streams) and/or `write` (everything else); both by default. */
    scopes: z
      .array(z.enum(tokenScopes, { error: "must be read or write" }))
      .min(1, "give at least one of read, write")
      .default(["read", "write"])
      .transform((s) => [...new Set(s)].sort()),
    /** Days until it stops working; none: until revoked. */
    expiresInDays: z
      .number({ error: "must be a whole number of days" })
      .int("must be a whole number of days")
      .min(1, "must be at least 1")
      .max(3650, "must be at most 3650")
      .optional(),
  })
  .strict();

export type TokenDto = {
  id: string;
  name: string;
  prefix: string;
  scopes: TokenScope[];
  expiresAt: string | null;
  createdAt: string;
  lastUsedAt: string | null;
};

function hashToken(secret: string): string {
  return createHash("sha256").update(secret).digest("hex");
}

/**
 * Creates a token for the principal's user and tenant (a platform admin without
 * a membership gets one without a tenant). The secret is returned once and never
 * stored. Only a browser session (or the CLI) makes tokens: a token cannot.
 */
export async function createApiToken(
  principal: Principal,
  body: unknown,
): Promise<{ token: string; record: TokenDto }> {
  requireBrowserSession(principal, "Creating an API token");
  const { name, scopes, expiresInDays } = parseOrThrow(createTokenSchema, body);
  // A token acts in its tenant; a platform admin's may have none (it acts as the admin).
  const tenantId = principal.isPlatformAdmin ? principal.tenantId : requireTenant(principal);
  const secret = TOKEN_PREFIX + randomBytes(32).toString("base64url");
  const row = await db().$transaction(async (tx) => {
    const [inserted] = await tx.$queryRaw<{ id: string }[]>`
      INSERT INTO api_tokens (id, user_id, tenant_id, name, token_hash, prefix, scopes, expires_at)
      VALUES (gen_random_uuid(), ${principal.userId}::uuid, ${tenantId}::uuid, ${name}, ${hashToken(secret)},
              ${secret.slice(0, 10)}, ${scopes}::text[],
              CASE WHEN ${expiresInDays ?? null}::int IS NULL THEN NULL
                   ELSE now() + make_interval(days => ${expiresInDays ?? null}::int) END)
      RETURNING id`;
    const created = await tx.apiToken.findUniqueOrThrow({ where: { id: inserted!.id } });
    await recordAudit(
      principal,
      {
        action: "token.create",
        targetType: "api_token",
        targetIds: [created.id],
        details: { name, scopes, expiresAt: created.expiresAt?.toISOString() ?? null },
      },
      tx,
    );
    return created;
  });
  return { token: secret, record: toTokenDto(row) };
}

/** Creates a token for a user by e-mail (the CLI). */
export async function createApiTokenForEmail(
  email: string,
  name: string,
  tenantSlug?: string,
  options: { scopes?: TokenScope[]; expiresInDays?: number } = {},
): Promise<string> {
  const user = await db().user.findUnique({ where: { email } });
  if (!user) throw new AppError("not_found", `No user with e-mail ${email}`);
  const tenant = tenantSlug ? await db().tenant.findUnique({ where: { slug: tenantSlug } }) : null;
  if (tenantSlug && !tenant) throw new AppError("not_found", `No tenant ${tenantSlug}`);
  const principal = await loadUserPrincipal(user.id, null, tenant?.id);
  if (!principal) throw new AppError("not_found", `${email} is not a member of ${tenantSlug}`);
  return (await createApiToken(principal, { name, ...options })).token;
}

/** The principal behind a bearer secret, or null if unknown or revoked. */
export async function principalFromToken(secret: string): Promise<Principal | null> {
  if (!secret.startsWith(TOKEN_PREFIX) || secret.length > 200) return null;
  // Revoked and expired tokens are unknown, on the database's clock.
  const [row] = await db().$queryRaw<{ id: string; userId: string; tenantId: string | null; scopes: TokenScope[] }[]>`
    SELECT id, user_id AS "userId", tenant_id AS "tenantId", scopes FROM api_tokens
    WHERE token_hash = ${hashToken(secret)} AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`;
  if (!row) return null;
  // Best effort and off the request's critical path.
  void db()
    .apiToken.update({ where: { id: row.id }, data: { lastUsedAt: new Date() } })
    .catch(() => {});
  const principal = await loadUserPrincipal(row.userId, row.id, row.tenantId ?? undefined, row.scopes);
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

/** Revokes one of the principal's own tokens; another user's token answers 404. From a browser session. */
export async function revokeApiToken(principal: Principal, id: string): Promise<void> {
  requireBrowserSession(principal, "Revoking an API token");
  if (!isUuid(id)) throw notFound("Token not found");
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
  scopes: string[];
  expiresAt: Date | null;
  createdAt: Date;
  lastUsedAt: Date | null;
}): TokenDto {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    scopes: row.scopes as TokenScope[],
    expiresAt: row.expiresAt?.toISOString() ?? null,
    createdAt: row.createdAt.toISOString(),
    lastUsedAt: row.lastUsedAt?.toISOString() ?? null,
  };
}
