/**
 * The routes the server `npm start` runs (scripts/serve.ts) answers itself, instead of through
 * Next.js: event streams onto the socket (lib/http/sse-direct.ts) and the API's hot routes
 * (lib/http/api-direct.ts). Which routes those are is route metadata: an operation declared with
 * `direct` (lib/api-doc.ts; lib/jobs/openapi.ts, lib/exports/openapi.ts, lib/openapi/system.ts),
 * whose path template (`/api/v1/jobs/{id}`, as the OpenAPI document spells it) is compiled here,
 * once, into the route's matcher. A route registers here when Next.js first loads its module,
 * with its own handler; until then its requests go through Next.js as any other. Process-wide
 * (a global), and free of imports: scripts/serve.ts reads it from outside the app's bundle.
 */
import type { IncomingMessage, ServerResponse } from "node:http";

export type DirectServe = (req: IncomingMessage, res: ServerResponse, params: Record<string, string>) => Promise<void>;
/** `stream`: an event stream; `api`: a plain answer. `public`: served without a Bearer token too (it reads no cookie). */
export type DirectKind = { kind: "stream" | "api"; public?: boolean };
/** An operation's metadata, as lib/api-doc.ts declares it: its method, its path template, how it is served directly. */
export type DirectOperation = { method: string; path: string; direct?: DirectKind };
type Entry = DirectKind & { method: string; path: string; pattern: RegExp; names: string[]; serve: DirectServe };

const key = Symbol.for("conveyor.sse.directRoutes");
const store = globalThis as unknown as { [key]?: Map<string, Entry> };

/**
 * A path template's matcher: each `{name}` one path segment (its group; the names in order),
 * the rest literal. `/api/v1/jobs/{id}` matches `/api/v1/jobs/abc`, not `/api/v1/jobs/abc/events`.
 */
export function pathMatcher(template: string): { pattern: RegExp; names: string[] } {
  const names: string[] = [];
  const source = template
    .split(/(\{\w+\})/)
    .map((part) => {
      const param = /^\{(\w+)\}$/.exec(part);
      if (!param) return part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
      names.push(param[1]!);
      return "([^/]+)";
    })
    .join("");
  return { pattern: new RegExp(`^${source}$`), names };
}

/** Registers the handler of an operation declared `direct` of this `kind`; one declared otherwise is a mistake. */
export function registerDirectRoute(op: DirectOperation, kind: DirectKind["kind"], serve: DirectServe): void {
  const method = op.method.toUpperCase();
  if (op.direct?.kind !== kind) throw new Error(`${method} ${op.path} is not declared direct (${kind})`);
  const { pattern, names } = pathMatcher(op.path);
  (store[key] ??= new Map()).set(`${method} ${op.path}`, {
    method,
    path: op.path,
    kind,
    public: op.direct.public,
    pattern,
    names,
    serve,
  });
}

/** The routes registered so far: `METHOD /path/{template}`, with how each is served. */
export function directRouteTable(): (DirectKind & { method: string; path: string })[] {
  return [...(store[key]?.values() ?? [])].map(({ method, path, kind, public: open }) => ({
    method,
    path,
    kind,
    ...(open ? { public: open } : {}),
  }));
}

/**
 * The registered route serving `method` of `url` (path and query), with its path parameters; null if
 * none, or if `allow` refuses its kind (scripts/serve.ts: the switches, and a Bearer token unless public).
 */
export function directRoute(
  url: string,
  method = "GET",
  allow: (route: DirectKind) => boolean = () => true,
): ((req: IncomingMessage, res: ServerResponse) => Promise<void>) | null {
  const routes = store[key];
  if (!routes) return null;
  const q = url.indexOf("?");
  const pathname = q === -1 ? url : url.slice(0, q);
  for (const route of routes.values()) {
    if (route.method !== method) continue;
    const m = route.pattern.exec(pathname);
    if (!m || !allow(route)) continue;
    let params: Record<string, string>;
    try {
      params = Object.fromEntries(route.names.map((n, i) => [n, decodeURIComponent(m[i + 1]!)]));
    } catch {
      // A malformed escape (`%E0`): Next.js answers it. Thrown here, it would end the server's process.
      return null;
    }
    return (req, res) => route.serve(req, res, params);
  }
  return null;
}

/** A path with a malformed escape (`%E0`): no route can read it (Next.js answered 500). */
function malformedPath(url: string): boolean {
  const q = url.indexOf("?");
  try {
    decodeURIComponent(q === -1 ? url : url.slice(0, q));
    return false;
  } catch {
    return true;
  }
}

/** A Host header no URL can be made of (`[`, a space) or that carries more than a host (`a/b`, `u@h`). */
function malformedHost(host: string | undefined): boolean {
  if (host === undefined) return false;
  try {
    const u = new URL(`http://${host}/`);
    return u.pathname !== "/" || u.search !== "" || u.hash !== "" || u.username !== "" || u.password !== "";
  } catch {
    return true;
  }
}

/** 400 for what no route can read: in the API's error shape under /api/, in words for a page. */
function badRequest(field: string, problem: string, words: string) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const api = (req.url ?? "/").startsWith("/api/");
    const body = api
      ? JSON.stringify({
          error: {
            code: "invalid_input",
            message: `Invalid input: ${field}: ${problem}`,
            fields: [{ path: field, message: problem }],
          },
        })
      : `Bad request: ${words}.\n`;
    res
      .writeHead(400, {
        "Content-Type": api ? "application/json" : "text/plain; charset=utf-8",
        "Content-Length": Buffer.byteLength(body),
        "X-Content-Type-Options": "nosniff",
      })
      .end(body);
  };
}

const badPath = badRequest("(path)", "malformed percent-encoding", "the address has a malformed percent-encoding (%)");
const badHost = badRequest("(host)", "malformed Host header", "the Host header is malformed");

/**
 * The direct route for a request to the server `npm start` runs, as scripts/serve.ts dispatches:
 * its kind switched on, and a Bearer token unless the route is public; a 400 for any path with a
 * malformed escape or a malformed Host header. Null: through Next.js.
 */
export function directRouteFor(
  req: IncomingMessage,
  on: { stream: boolean; api: boolean },
): ((req: IncomingMessage, res: ServerResponse) => Promise<void>) | null {
  if (malformedPath(req.url ?? "/")) return badPath;
  // (A route's Request is built from the Host: a malformed one threw there, unhandled on a stream's path.)
  if (malformedHost(req.headers.host)) return badHost;
  const bearer = Boolean(req.headers.authorization);
  return directRoute(req.url ?? "/", req.method, (r) => on[r.kind] && (bearer || Boolean(r.public)));
}
