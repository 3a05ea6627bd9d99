/**
 * The wrappers every route handler uses: `withPrincipal` (authenticate, run,
 * map errors) for the API, `publicRoute` (run, map errors) for the few routes
 * that take no sign-in: health, metrics (its own bearer token), download links.
 * Both run the handler under `withRequestLog`: a request id, in every record
 * logged meanwhile and in the `X-Request-Id` response header, and one record
 * per request (method, path, status, duration; never the body or the query).
 */
import { randomUUID } from "node:crypto";
import { requireScope } from "../auth/authorize";
import type { Principal } from "../auth/principal";
import { addressKey, budgetOf, principalKey, refuseIfRemembered, spendRateLimit } from "../auth/rate-limit";
import { credentialAlias, learnOwner, quotaKey, rememberAnswer } from "../auth/refusal-memory";
import { env } from "../env";
import { AppError } from "../errors";
import { logger, scrubSecrets, withLogContext } from "../log";
import {
  activeSpan,
  contextFromHeaders,
  failSpan,
  hasActiveSpan,
  SpanKind,
  SpanStatusCode,
  spanPath,
  withSpan,
} from "../tracing";
import { clientAddressFrom } from "./client";
import { requirePrincipal } from "./principal";
import { readPrimaryUntilOf, recordWrite } from "./read-window";
import { errorResponse } from "./respond";

type RouteContext<P> = { params: Promise<P> };

/** An `X-Request-Id` a client or a proxy sent is kept when it is a plain token of at most 128 characters. */
const SANE_REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

/** The request's id: its sane `X-Request-Id`, or a new UUID. */
export function requestIdOf(req: Request): string {
  const given = req.headers.get("x-request-id")?.trim();
  return given && SANE_REQUEST_ID.test(given) ? given : randomUUID();
}

const httpLog = logger.child({ component: "http" });

/**
 * Runs a route handler with a request id bound to its logs and answered in
 * `X-Request-Id`, and logs the request once it is answered: 5xx as errors,
 * 4xx at debug (refusals are the client's business), the rest at info.
 */
export function withRequestLog<A extends unknown[]>(
  handler: (req: Request, ...rest: A) => Promise<Response>,
): (req: Request, ...rest: A) => Promise<Response> {
  return (req, ...rest) => {
    const requestId = requestIdOf(req);
    return withLogContext({ requestId }, async () => {
      const started = performance.now();
      const res = await handler(req, ...rest);
      try {
        res.headers.set("X-Request-Id", requestId);
      } catch {
        /* an immutable response (a redirect): its headers stay as they are */
      }
      const fields = {
        method: req.method,
        // A download link's path is its secret (/d/dl_…).
        path: scrubSecrets(new URL(req.url).pathname),
        status: res.status,
        ms: Math.round(performance.now() - started),
      };
      // Health probes come every few seconds from every load balancer: debug, like refusals.
      const quiet = res.status >= 400 || fields.path === "/api/health";
      const level = res.status >= 500 ? "error" : quiet ? "debug" : "info";
      httpLog[level](fields, `[http] ${fields.method} ${fields.path} ${fields.status} in ${fields.ms} ms`);
      return res;
    });
  };
}

/**
 * A span per API request, active while it runs, so what it enqueues continues
 * its trace. Under Next.js with tracing on, Next's own server span is active
 * and has already continued an incoming `traceparent`: this one is its child.
 * Otherwise (a test calling the handler, Next without its span) it continues
 * the request's `traceparent` itself. Off, it costs a no-op span.
 */
const failed = new WeakSet<Response>();

/** The error's response; a 5xx (a fault of ours) also marks the request span failed with the exception. */
function failedResponse(err: unknown): Response {
  const res = errorResponse(err);
  if (res.status >= 500) {
    failSpan(activeSpan(), err);
    failed.add(res);
  }
  return res;
}

function traceRequest(req: Request, run: () => Promise<Response>): Promise<Response> {
  const path = spanPath(new URL(req.url).pathname);
  const inNextSpan = hasActiveSpan();
  return withSpan(
    `${req.method} ${path}`,
    { "http.request.method": req.method, "url.path": path },
    async (span) => {
      const res = await run();
      span.setAttribute("http.response.status_code", res.status);
      // A server span is an error only for 5xx; a 4xx is the client's.
      if (res.status >= 500 && !failed.has(res))
        span.setStatus({ code: SpanStatusCode.ERROR, message: `HTTP ${res.status}` });
      return res;
    },
    inNextSpan ? {} : { kind: SpanKind.SERVER, parent: contextFromHeaders(req.headers) },
  );
}

/** `res` with the read-your-writes cookie when `writer` is an operator who sent a write (lib/http/read-window.ts). */
function withWriteWindow(req: Request, writer: Principal | null, res: Response): Response {
  const cookie = writer ? recordWrite(req, writer) : null;
  if (cookie) {
    try {
      res.headers.append("Set-Cookie", cookie);
    } catch {
      /* an immutable response (a redirect): the window holds in this process only */
    }
  }
  return res;
}

export function withPrincipal<P = Record<string, never>>(
  handler: (req: Request, principal: Principal, params: P) => Promise<Response>,
): (req: Request, ctx: RouteContext<P>) => Promise<Response> {
  // The request's span outside, its log line inside: the line carries the span's trace id.
  const logged = withRequestLog(async (req: Request, ctx: RouteContext<P>) => {
    // Whose write this is, once known: it opens their read-your-writes window however it ends (a
    // refused or failed write may still have changed something).
    let writer: Principal | null = null;
    try {
      const budget = budgetOf(req.method);
      // A token or session this process saw refused is refused again at once, before it is even looked
      // up (scripts/serve.ts refuses it earlier still, before Next.js: lib/http/gate.ts).
      const alias = credentialAlias(req.headers.get("authorization"), req.headers.get("cookie"));
      if (alias) refuseIfRemembered(alias, budget);
      // An address that spent its budget on refused credentials is refused from memory, before any lookup.
      const address = addressKey(clientAddressFrom(req.headers));
      refuseIfRemembered(address, "anonymous");
      const principal = await requirePrincipal(req).catch(async (err: unknown) => {
        // Refused credentials (a guessed token, an expired session) spend the address's budget: 429 past it.
        if (err instanceof AppError && err.code === "unauthorized") await spendRateLimit(address, "anonymous");
        throw err;
      });
      if (principal.tenantId) activeSpan().setAttribute("conveyor.tenant.id", principal.tenantId);
      // The gate groups this credential's next requests under its user before looking anything up.
      if (alias) learnOwner(alias, principalKey(principal));
      requireScope(principal, budget === "reads" ? "read" : "write");
      const { headers } = await spendRateLimit(principalKey(principal), budget, alias ? [alias] : []);
      writer = principal;
      // Read your writes (lib/read-db.ts): a recent write's cookie sends this principal's console reads to the primary.
      const readPrimaryUntil = readPrimaryUntilOf(req);
      const res = await handler(
        req,
        readPrimaryUntil ? { ...principal, readPrimaryUntil } : principal,
        await ctx.params,
      );
      for (const [k, v] of Object.entries(headers)) {
        try {
          res.headers.set(k, v);
        } catch {
          /* an immutable response (a redirect): its headers stay as they are */
        }
      }
      return withWriteWindow(req, writer, res);
    } catch (err) {
      const res = failedResponse(err);
      if (writer && err instanceof AppError && err.code === "quota_exceeded")
        await rememberQuotaRefusal(req, writer, res);
      return withWriteWindow(req, writer, res);
    }
  });
  return (req, ctx) => traceRequest(req, () => logged(req, ctx));
}

/**
 * A quota refusal (its user or tenant has as many unfinished jobs as it may) is remembered for
 * REFUSAL_MEMORY_MS under this route and principal (and the credential's alias), so the gate answers
 * the same route's next requests with it from memory, held, before Next.js and before any query
 * (lib/http/gate.ts): a flood past its quota then costs the server as little as one past its rate.
 * At most REFUSAL_MEMORY_MS stale: a job of theirs that ends meanwhile frees the quota for the
 * request after that.
 */
async function rememberQuotaRefusal(req: Request, principal: Principal, res: Response): Promise<void> {
  const ms = env().REFUSAL_MEMORY_MS;
  if (ms <= 0) return;
  const pathname = new URL(req.url).pathname;
  const alias = credentialAlias(req.headers.get("authorization"), req.headers.get("cookie"));
  const headers: Record<string, string> = {};
  res.headers.forEach((v, k) => {
    if (k !== "x-request-id" && k !== "content-length" && k !== "set-cookie") headers[k] = v;
  });
  rememberAnswer(
    [principalKey(principal), ...(alias ? [alias] : [])].map((who) => quotaKey(req.method, pathname, who)),
    ms,
    { status: res.status, body: await res.clone().text(), headers },
  );
}

/**
 * A route without sign-in (it authorizes by itself, or not at all); errors map like every other route's.
 * `perAddress`: each request spends its client address's budget (RATE_LIMIT_ANON_PER_MINUTE).
 */
export function publicRoute<P = Record<string, never>>(
  handler: (req: Request, params: P) => Promise<Response>,
  opts: { perAddress?: boolean } = {},
): (req: Request, ctx: RouteContext<P>) => Promise<Response> {
  const logged = withRequestLog(async (req: Request, ctx: RouteContext<P>) => {
    try {
      const { headers } = opts.perAddress
        ? await spendRateLimit(addressKey(clientAddressFrom(req.headers)), "anonymous")
        : { headers: {} };
      const res = await handler(req, await ctx.params);
      for (const [k, v] of Object.entries(headers)) {
        try {
          res.headers.set(k, v);
        } catch {
          /* an immutable response (a redirect): its headers stay as they are */
        }
      }
      return res;
    } catch (err) {
      return failedResponse(err);
    }
  });
  return (req, ctx) => traceRequest(req, () => logged(req, ctx));
}

/** The body as text, refused (413) past MAX_BODY_BYTES before it is parsed — whether or not a length was declared. */
export async function readBodyText(req: Request, max = env().MAX_BODY_BYTES): Promise<string> {
  const tooLarge = () =>
    new AppError("payload_too_large", `Invalid input: body: must be at most ${max} bytes`, [
      { path: "(body)", message: `must be at most ${max} bytes` },
    ]);
  if (Number(req.headers.get("content-length") ?? 0) > max) throw tooLarge();
  if (!req.body) return "";
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => {});
      throw tooLarge();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}

const malformed = () =>
  new AppError("invalid_input", "Invalid input: body: must be a JSON object", [
    { path: "(body)", message: "must be a JSON object" },
  ]);

/** Reads a JSON body; a malformed one is a 400, a too large one 413, never a 500. */
export async function readJson(req: Request): Promise<unknown> {
  const text = await readBodyText(req);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw malformed();
  }
}

/** Reads a JSON body that may be left out: none (or only whitespace) is `{}`; a malformed one is a 400. */
export async function readOptionalJson(req: Request): Promise<unknown> {
  const text = await readBodyText(req);
  if (!text.trim()) return {};
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw malformed();
  }
}

/** URL search params as a plain object (the first value of each key). */
export function queryObject(req: Request): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of new URL(req.url).searchParams) if (!(k in out)) out[k] = v;
  return out;
}
