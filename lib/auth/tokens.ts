/**
 * API tokens: random secrets shown once, stored as sha256 hashes.
 * A token acts as its user within the token's tenant.
 */
import { createHash, randomBytes } from "node:crypto";
import { z } from "zod";
import { recordAudit } from "../audit";
import { db, pool, prepared } from "../db";
import { env } from "../env";
import { AppError, notFound, parseOrThrow } from "../errors";
import { isUuid } from "../ids";
import { Batcher } from "../batcher";
import { requireBrowserSession, requireTenant } from "./authorize";
import { loadUserPrincipal, tokenScopes, type Principal, type Role, type TokenScope } from "./principal";
import { countUserTokens } from "./sql/count-user-tokens";
import { lockUserTokens } from "./sql/lock-user-tokens";

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
 * stored. Only a browser session (or the CLI) makes tokens: a token cannot. A user
 * keeps at most QUOTA_TOKENS_PER_USER live tokens (in all tenants): 429 `quota_exceeded`.
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
    // Limits are per user, so tokens are cheap to multiply only up to this cap.
    await lockUserTokens(tx, principal.userId);
    const limit = env().QUOTA_TOKENS_PER_USER;
    const used = await countUserTokens(tx, principal.userId);
    if (used >= limit) {
      throw new AppError(
        "quota_exceeded",
        `Quota exceeded: tokens_per_user — at most ${limit} live API tokens per user, and you have ${used}; revoke one first`,
        undefined,
        { details: { quota: "tokens_per_user", limit, used } },
      );
    }
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
  // One statement: the token (revoked and expired ones are unknown, on the database's clock), its
  // user and the membership it acts in (the token's tenant, or a tenantless token's first), as
  // loadUserPrincipal reads them. Every API request pays it: four round trips were the most of a create.
  // Through node-postgres, not Prisma: on the path of every API request, Prisma's raw query served
  // a tenth of the concurrent requests the same statement does on the pool (bench:api, part 4).
  // Concurrent lookups go together, one statement per batch (lib/batcher.ts): each
  // lookup's statement still starts after the request arrived, so a revocation committed
  // before it is seen.
  const row = await tokenLookups().push(hashToken(secret));
  if (!row) return null;
  // A token of a tenant the user has left is dead.
  if (row.tokenTenantId && !row.tenantId) return null;
  // A tenantless token is a platform admin's: it dies with the role (it never
  // falls back to some membership the user gained since).
  if (row.tokenTenantId === null && !row.isPlatformAdmin) return null;
  // When it was last used, to the minute: best effort, off the request's path, and written at most
  // once a minute (a row write per request serialised concurrent clients of one token on its lock).
  if (row.stale) {
    void pool()
      .query(
        `UPDATE api_tokens SET last_used_at = now() WHERE id = $1::uuid
          AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`,
        [row.id],
      )
      .catch(() => {});
  }
  return {
    userId: row.userId,
    email: row.email,
    tenantId: row.tenantId,
    tenantSlug: row.tenantSlug,
    role: row.role,
    isPlatformAdmin: row.isPlatformAdmin,
    tokenId: row.id,
    scopes: row.scopes,
  };
}

type TokenRow = {
  hash: string;
  id: string;
  userId: string;
  tokenTenantId: string | null;
  scopes: TokenScope[];
  stale: boolean;
  email: string;
  isPlatformAdmin: boolean;
  tenantId: string | null;
  tenantSlug: string | null;
  role: Role | null;
};

/** The live tokens of these hashes, with their users and memberships: one row per token found. */
async function lookUpTokens(hashes: string[]): Promise<(TokenRow | undefined)[]> {
  const { rows } = await pool().query<TokenRow>({
    ...prepared(`SELECT t.token_hash AS hash, t.id, t.user_id AS "userId", t.tenant_id AS "tokenTenantId", t.scopes,
            (t.last_used_at IS NULL OR t.last_used_at < now() - interval '1 minute') AS stale,
            u.email, u.is_platform_admin AS "isPlatformAdmin",
            m.tenant_id AS "tenantId", tn.slug AS "tenantSlug", m.role::text AS role
     FROM api_tokens t
     JOIN users u ON u.id = t.user_id
     LEFT JOIN LATERAL (
       SELECT tenant_id, role FROM memberships
       WHERE user_id = t.user_id AND (t.tenant_id IS NULL OR tenant_id = t.tenant_id)
       ORDER BY created_at LIMIT 1
     ) m ON true
     LEFT JOIN tenants tn ON tn.id = m.tenant_id
     WHERE t.token_hash = ANY($1::text[]) AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now())`),
    values: [[...new Set(hashes)]],
  });
  const byHash = new Map(rows.map((r) => [r.hash, r]));
  return hashes.map((h) => byHash.get(h));
}

let tokenBatcher: Batcher<string, TokenRow | undefined> | undefined;
const tokenLookups = () => (tokenBatcher ??= new Batcher(lookUpTokens, { maxBatch: 100, maxInFlight: 2, eager: true }));

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
