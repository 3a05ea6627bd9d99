/**
 * API rate limits, fleet-wide: every app process sees the same budget, kept in
 * Postgres (an unlogged table) with the generic cell rate algorithm — one row
 * per user and budget holding its "theoretical arrival time", moved by one
 * statement per request. A budget is the user's: every token of theirs and
 * their browser session draw from it (a token is a part of its user's budget,
 * never one of its own: more tokens buy no more requests). A budget of `limit`
 * per minute allows bursts of up to `limit` and then one request per 60/limit
 * seconds. Reads and writes have budgets of their own; another user's budget
 * is never touched. Requests without a principal spend their client address's
 * `anonymous` budget.
 * Over budget: 429 with `Retry-After` and the IETF httpapi draft's headers
 * (`RateLimit-Policy: "writes";q=300;w=60`, `RateLimit: "writes";r=0;t=12`).
 */
import { pool } from "../db";
import { env } from "../env";
import { AppError } from "../errors";
import type { Principal } from "./principal";
import {
  type Budget,
  forgetRemembered,
  rateLimitedParts,
  rememberedRefusal,
  rememberRefusal,
  WINDOW_S,
} from "./refusal-memory";

export type { Budget };

/** Which budget a request spends: GET and HEAD (and opening a stream) are reads. */
export function budgetOf(method: string): Budget {
  return method === "GET" || method === "HEAD" || method === "OPTIONS" ? "reads" : "writes";
}

/** The key a principal's budgets (and its stream slots) are kept under: its user's, whichever token or session. */
export function principalKey(p: Pick<Principal, "userId">): string {
  return `user:${p.userId}`;
}

function limitOf(budget: Budget): number {
  if (budget === "anonymous") return env().RATE_LIMIT_ANON_PER_MINUTE;
  return budget === "reads" ? env().RATE_LIMIT_READS_PER_MINUTE : env().RATE_LIMIT_WRITES_PER_MINUTE;
}

/** The key a client address's `anonymous` budget is kept under. */
export const addressKey = (address: string) => `address:${address}`;

export type RateLimitOutcome = { headers: Record<string, string> };

/**
 * Refusals this process already got from Postgres, until their Retry-After but never longer than
 * REFUSAL_MEMORY_MS (lib/auth/refusal-memory.ts): a flood is then refused from memory, before any
 * query — by scripts/serve.ts before Next.js even sees it (lib/http/gate.ts), and here before its
 * token is looked up, through `aliases` — so it costs the server next to nothing and everybody
 * else keeps their speed. Only Postgres ever allows.
 */
function rateLimited(budget: Budget, limit: number, retryAfter: number): AppError {
  const { message, details, headers } = rateLimitedParts(budget, limit, retryAfter);
  return new AppError("rate_limited", message, undefined, { details, headers });
}

/** Forgets remembered refusals (tests that change the limits). */
export function forgetRefusals(): void {
  forgetRemembered();
}

/** Throws the 429 at once if this process was told within the budget's Retry-After that `key` is over it. */
export function refuseIfRemembered(key: string, budget: Budget): void {
  if (limitOf(budget) === 0) return;
  const memo = rememberedRefusal(`${budget}:${key}`);
  if (!memo) return;
  const left = memo.until - Date.now();
  throw rateLimited(budget, memo.limit, Math.max(1, Math.ceil(left / 1000)));
}

/**
 * Spends one request of `key`'s budget: the headers to send along, or a 429
 * AppError (with them and Retry-After) when the budget is spent. A limit of 0
 * turns the budget off (no headers).
 */
export async function spendRateLimit(key: string, budget: Budget, aliases: string[] = []): Promise<RateLimitOutcome> {
  const limit = limitOf(budget);
  if (limit === 0) return { headers: {} };
  refuseIfRemembered(key, budget);
  const intervalS = WINDOW_S / limit;
  const { rows } = await pool().query<{ allowed: boolean; waitS: number; aheadS: number }>(
    `WITH spend AS (
       INSERT INTO rate_limits (key, tat) VALUES ($1, clock_timestamp() + make_interval(secs => $2))
       ON CONFLICT (key) DO UPDATE SET tat = greatest(rate_limits.tat, clock_timestamp()) + make_interval(secs => $2)
         WHERE greatest(rate_limits.tat, clock_timestamp()) + make_interval(secs => $2)
               <= clock_timestamp() + make_interval(secs => $3)
       RETURNING tat
     )
     SELECT EXISTS (SELECT 1 FROM spend) AS allowed,
            -- refused: how long until one more fits; allowed: how far the budget is spent ahead
            extract(epoch FROM (SELECT tat FROM rate_limits WHERE key = $1) + make_interval(secs => $2)
                    - make_interval(secs => $3) - clock_timestamp())::float8 AS "waitS",
            extract(epoch FROM coalesce((SELECT tat FROM spend), clock_timestamp()) - clock_timestamp())::float8 AS "aheadS"`,
    [`${budget}:${key}`, intervalS, WINDOW_S],
  );
  const row = rows[0]!;
  const policy = `"${budget}";q=${limit};w=${WINDOW_S}`;
  if (!row.allowed) {
    const retryAfter = Math.max(1, Math.ceil(row.waitS));
    rememberRefusal(
      [key, ...aliases].map((k) => `${budget}:${k}`),
      row.waitS * 1000,
      env().REFUSAL_MEMORY_MS,
      limit,
    );
    throw rateLimited(budget, limit, retryAfter);
  }
  const remaining = Math.max(0, Math.floor((WINDOW_S - row.aheadS) / intervalS));
  return {
    headers: {
      "RateLimit-Policy": policy,
      RateLimit: `"${budget}";r=${remaining};t=${Math.max(0, Math.ceil(row.aheadS))}`,
    },
  };
}
