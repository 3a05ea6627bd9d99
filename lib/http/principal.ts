/**
 * Authenticating a request: `Authorization: Bearer <token>` for the API, the
 * session cookie for the browser. Cookie-authenticated state changes must come
 * from our own origin (CSRF): the Origin's host is compared with the host the
 * client asked for, as scripts/serve.ts recorded it (a proxy's X-Forwarded-Host
 * counts only when TRUST_PROXY trusts that proxy).
 */
import { notFound } from "next/navigation";
import { isOperator } from "../auth/authorize";
import { loadSessionPrincipal, type Principal } from "../auth/principal";
import { principalFromToken } from "../auth/tokens";
import { AppError } from "../errors";
// Every page and route authenticates through here: the task types must be known before any lib/ call.
import "../workloads";
import "./progress-words";
import { auth } from "./auth";
import { clientHostFrom } from "./client";

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** Rejects a cookie-authenticated, state-changing request that did not come from this site. */
export function assertSameOrigin(req: Request): void {
  if (SAFE_METHODS.has(req.method)) return;
  const site = req.headers.get("sec-fetch-site");
  if (site && site !== "same-origin" && site !== "none") {
    throw new AppError("forbidden", "Cross-site request refused");
  }
  const origin = req.headers.get("origin");
  if (origin) {
    const host = clientHostFrom(req.headers);
    let originHost: string | null = null;
    try {
      originHost = new URL(origin).host;
    } catch {
      /* "null" or garbage */
    }
    if (!host || originHost !== host) throw new AppError("forbidden", "Cross-site request refused");
  }
}

/** The principal of a request, or null when it carries no valid credentials. */
export async function principalFromRequest(req: Request): Promise<Principal | null> {
  const header = req.headers.get("authorization");
  if (header) {
    const match = /^Bearer\s+(\S+)$/i.exec(header);
    if (!match?.[1]) throw new AppError("unauthorized", "Malformed Authorization header; expected: Bearer <token>");
    const principal = await principalFromToken(match[1]);
    if (!principal) throw new AppError("unauthorized", "Invalid or revoked API token");
    return principal;
  }
  // No cookie, no session: nothing for Auth.js to read.
  if (!req.headers.get("cookie")) return null;
  const session = await auth();
  const userId = session?.user?.id;
  if (!userId) return null;
  assertSameOrigin(req);
  return loadSessionPrincipal(userId, session.authAt);
}

/** Like principalFromRequest, but a missing principal is a 401. */
export async function requirePrincipal(req: Request): Promise<Principal> {
  const principal = await principalFromRequest(req);
  if (!principal) throw new AppError("unauthorized", "Sign in or send Authorization: Bearer <token>");
  return principal;
}

/** The signed-in user's principal for server components (no request object), or null. */
export async function sessionPrincipal(): Promise<Principal | null> {
  const session = await auth();
  const userId = session?.user?.id;
  return userId ? loadSessionPrincipal(userId, session.authAt) : null;
}

/**
 * For console pages: the signed-in operator or platform admin (`adminOnly`:
 * platform admins alone). Anyone else gets the 404 page: the page does not
 * exist for them (the API answers 403).
 */
export async function consolePagePrincipal(adminOnly = false): Promise<Principal> {
  const principal = await sessionPrincipal();
  const allowed = principal && (adminOnly ? principal.isPlatformAdmin : isOperator(principal));
  if (!allowed) notFound();
  return principal;
}
