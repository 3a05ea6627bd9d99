/**
 * What this process remembers of the fleet-wide rate limits (lib/auth/rate-limit.ts), kept on a
 * process-wide global so that both copies of the code read the same memory: the app's bundle
 * (Next.js's route modules, which spend budgets in Postgres and learn refusals) and the server
 * `npm start` runs (scripts/serve.ts through lib/http/gate.ts, which refuses from this memory
 * before Next.js and before any query). Free of imports but node:crypto, for that reason.
 *  - refusals: a budget key (`writes:user:…`, `writes:bearer:…`, `anonymous:address:…`) Postgres
 *    refused, until the wait it named, never longer than the stated staleness `maxMs`;
 *  - credentials: which user a bearer token or a session cookie (by a hash, never the secret) was
 *    last seen to belong to, for a minute, so the gate can group a user's requests before the
 *    token is looked up.
 * Only Postgres ever allows a request; this memory only refuses, and only what Postgres refused.
 */
import { createHash } from "node:crypto";

/** A refusal's answer as the route gave it, replayed by the gate (a quota's 429: its body and headers). */
export type RememberedAnswer = { status: number; body: string; headers: Record<string, string> };

/**
 * A remembered refusal: until when (ms since the epoch), and the limit it was made under; for a
 * refusal that is not a rate limit's (a quota's), the answer itself.
 */
export type Remembered = { until: number; limit: number; answer?: RememberedAnswer };

type Memory = { refused: Map<string, Remembered>; owners: Map<string, { key: string; until: number }> };

const memoryKey = Symbol.for("conveyor.rateLimit.memory");
const store = globalThis as unknown as { [memoryKey]?: Memory };

function memory(): Memory {
  return (store[memoryKey] ??= { refused: new Map(), owners: new Map() });
}

const MAX_ENTRIES = 10_000;
/** How long a credential's owner is believed without seeing it authenticated again. */
export const OWNER_TTL_MS = 60_000;

function bounded<V extends { until: number }>(map: Map<string, V>): void {
  if (map.size < MAX_ENTRIES) return;
  const now = Date.now();
  for (const [k, v] of map) if (v.until <= now) map.delete(k);
  if (map.size >= MAX_ENTRIES) map.clear();
}

/** Remembers that Postgres refused `keys` (budget-qualified) for `waitMs`, at most `maxMs`. */
export function rememberRefusal(keys: string[], waitMs: number, maxMs: number, limit: number): void {
  const { refused } = memory();
  bounded(refused);
  const until = Date.now() + Math.max(0, Math.min(waitMs, maxMs));
  for (const k of keys) refused.set(k, { until, limit });
}

/**
 * The key a create route's quota refusal is remembered under, per route and principal (or credential
 * alias): `quota:POST /api/v1/exports:user:…`. Per route, so that a user at their quota of unfinished
 * jobs can still cancel one (which frees it).
 */
export function quotaKey(method: string, pathname: string, who: string): string {
  return `quota:${method} ${pathname}:${who}`;
}

/** Remembers a refusal Postgres gave that is not a rate limit's (a quota's), with its answer, for `ms`. */
export function rememberAnswer(keys: string[], ms: number, answer: RememberedAnswer): void {
  if (ms <= 0) return;
  const { refused } = memory();
  bounded(refused);
  const until = Date.now() + ms;
  for (const k of keys) refused.set(k, { until, limit: 0, answer });
}

/** The refusal remembered for `key` (budget-qualified) while it holds; null once it has run out. */
export function rememberedRefusal(key: string): Remembered | null {
  const { refused } = memory();
  const memo = refused.get(key);
  if (!memo) return null;
  if (memo.until <= Date.now()) {
    refused.delete(key);
    return null;
  }
  return memo;
}

/** Forgets every remembered refusal and owner (tests that change the limits). */
export function forgetRemembered(): void {
  memory().refused.clear();
  memory().owners.clear();
}

const digest = (s: string) => createHash("sha256").update(s).digest("base64url").slice(0, 32);

/** The alias a bearer token is remembered under (a hash, never the token). */
export function bearerAlias(authorization: string | null | undefined): string | null {
  const token = authorization && /^Bearer\s+(\S+)$/i.exec(authorization)?.[1];
  return token ? `bearer:${digest(token)}` : null;
}

/** Auth.js's session cookie, plain or `__Secure-`, whole or in chunks (`.0`, `.1`, …). */
const SESSION_COOKIE = /^(?:__Secure-)?authjs\.session-token(?:\.\d+)?$/;

/** The alias a browser session is remembered under: a hash of its session cookie's value(s); null without one. */
export function sessionAlias(cookie: string | null | undefined): string | null {
  if (!cookie) return null;
  const parts: string[] = [];
  for (const pair of cookie.split(";")) {
    const eq = pair.indexOf("=");
    if (eq === -1) continue;
    const name = pair.slice(0, eq).trim();
    if (SESSION_COOKIE.test(name)) parts.push(`${name}=${pair.slice(eq + 1).trim()}`);
  }
  return parts.length ? `session:${digest(parts.sort().join(";"))}` : null;
}

/** The credential's alias: its bearer token's, else its session cookie's; null for a request with neither. */
export function credentialAlias(authorization: string | null | undefined, cookie: string | null | undefined) {
  return authorization ? bearerAlias(authorization) : sessionAlias(cookie);
}

/** Records that `alias` authenticated as the principal whose budgets are kept under `key` (`user:…`). */
export function learnOwner(alias: string, key: string): void {
  const { owners } = memory();
  bounded(owners);
  owners.set(alias, { key, until: Date.now() + OWNER_TTL_MS });
}

/** The principal key `alias` was last seen to authenticate as, within OWNER_TTL_MS; null if unknown. */
export function ownerOf(alias: string): string | null {
  const { owners } = memory();
  const seen = owners.get(alias);
  if (!seen) return null;
  if (seen.until <= Date.now()) {
    owners.delete(alias);
    return null;
  }
  return seen.key;
}

/** A principal's reads and writes; `anonymous`: requests without a principal, per client address. */
export type Budget = "reads" | "writes" | "anonymous";

/** The window every budget's limit is counted over, in seconds. */
export const WINDOW_S = 60;

/** A 429's words, details and headers, alike whether Postgres refused it or this memory did. */
export function rateLimitedParts(budget: Budget, limit: number, retryAfter: number) {
  return {
    message: `Too many ${budget === "anonymous" ? "requests without sign-in from this address" : budget}: at most ${limit} a minute; try again in ${retryAfter} s`,
    details: { budget, limit, windowSeconds: WINDOW_S, retryAfterSeconds: retryAfter },
    headers: {
      "Retry-After": String(retryAfter),
      "RateLimit-Policy": `"${budget}";q=${limit};w=${WINDOW_S}`,
      RateLimit: `"${budget}";r=0;t=${retryAfter}`,
    },
  };
}
