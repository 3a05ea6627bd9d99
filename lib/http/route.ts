/**
 * The wrappers every route handler uses: `withPrincipal` (authenticate, run,
 * map errors) for the API, `publicRoute` (run, map errors) for the few routes
 * that take no sign-in: health, metrics (its own bearer token), download links.
 */
import type { Principal } from "../auth/principal";
import { AppError } from "../errors";
import { requirePrincipal } from "./principal";
import { errorResponse } from "./respond";

type RouteContext<P> = { params: Promise<P> };

export function withPrincipal<P = Record<string, never>>(
  handler: (req: Request, principal: Principal, params: P) => Promise<Response>,
): (req: Request, ctx: RouteContext<P>) => Promise<Response> {
  return async (req, ctx) => {
    try {
      const principal = await requirePrincipal(req);
      return await handler(req, principal, await ctx.params);
    } catch (err) {
      return errorResponse(err);
    }
  };
}

/** A route without sign-in (it authorizes by itself, or not at all); errors map like every other route's. */
export function publicRoute<P = Record<string, never>>(
  handler: (req: Request, params: P) => Promise<Response>,
): (req: Request, ctx: RouteContext<P>) => Promise<Response> {
  return async (req, ctx) => {
    try {
      return await handler(req, await ctx.params);
    } catch (err) {
      return errorResponse(err);
    }
  };
}

/** Reads a JSON body; a malformed one is a 400, not a 500. */
export async function readJson(req: Request): Promise<unknown> {
  try {
    return await req.json();
  } catch {
    throw new AppError("invalid_input", "Invalid input: body: must be a JSON object", [
      { path: "(body)", message: "must be a JSON object" },
    ]);
  }
}

/** Reads a JSON body that may be left out: none (or only whitespace) is `{}`; a malformed one is a 400. */
export async function readOptionalJson(req: Request): Promise<unknown> {
  const text = await req.text();
  if (!text.trim()) return {};
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new AppError("invalid_input", "Invalid input: body: must be a JSON object", [
      { path: "(body)", message: "must be a JSON object" },
    ]);
  }
}

/** URL search params as a plain object (the first value of each key). */
export function queryObject(req: Request): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of new URL(req.url).searchParams) if (!(k in out)) out[k] = v;
  return out;
}
