/**
 * Read your writes across web processes (lib/read-db.ts): after an operator's successful write, the
 * response carries a cookie saying until when their console reads must go to the primary; whichever
 * process serves their next request reads it here. It holds a time and nothing else: forging it can
 * only send one's own reads to the primary, and a value further ahead than the bound is ignored.
 */
import { isOperator } from "../auth/authorize";
import type { Principal } from "../auth/principal";
import { env } from "../env";
import { noteWrite } from "../read-db";

export const READ_PRIMARY_COOKIE = "conveyor_read_primary";

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** Until when (ms since the epoch) the request's cookie sends its reads to the primary; undefined when it does not. */
export function readPrimaryUntilOf(req: Request, now = Date.now()): number | undefined {
  if (!env().DATABASE_REPLICA_URL) return undefined;
  const cookie = req.headers.get("cookie");
  if (!cookie) return undefined;
  const m = new RegExp(`(?:^|;\\s*)${READ_PRIMARY_COOKIE}=(\\d{1,16})(?:;|$)`).exec(cookie);
  const until = m ? Number(m[1]) : NaN;
  return until > now && until <= now + env().DATABASE_REPLICA_MAX_LAG_MS ? until : undefined;
}

/**
 * After a request: an operator's (or platform admin's) write opens their read-your-writes window, in
 * this process and, through the returned Set-Cookie value, in the others — whatever it answered (a
 * failed bulk action may have done part of its work). Null when there is nothing to record (no
 * replica, a read, a member: members' pages never read the replica).
 */
export function recordWrite(req: Request, principal: Principal): string | null {
  if (!env().DATABASE_REPLICA_URL || SAFE_METHODS.has(req.method) || !isOperator(principal)) {
    return null;
  }
  const until = noteWrite(principal.userId);
  const maxAge = Math.ceil(env().DATABASE_REPLICA_MAX_LAG_MS / 1000);
  const secure = new URL(req.url).protocol === "https:" ? "; Secure" : "";
  return `${READ_PRIMARY_COOKIE}=${until}; Max-Age=${maxAge}; Path=/; HttpOnly; SameSite=Lax${secure}`;
}
