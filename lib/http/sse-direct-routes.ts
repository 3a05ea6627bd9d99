/**
 * The routes the server `npm start` runs (scripts/serve.ts) answers itself, instead of through
 * Next.js: event streams onto the socket (lib/http/sse-direct.ts) and the API's hot routes
 * (lib/http/api-direct.ts). A route registers here when Next.js first loads its module; until
 * then its requests go through Next.js as any other. Process-wide (a global), and free of
 * imports: scripts/serve.ts reads it from outside the app's bundle.
 */
import type { IncomingMessage, ServerResponse } from "node:http";

export type DirectServe = (req: IncomingMessage, res: ServerResponse, params: Record<string, string>) => Promise<void>;
/** `stream`: an event stream; `api`: a plain answer. `public`: served without a Bearer token too (it reads no cookie). */
export type DirectKind = { kind: "stream" | "api"; public?: boolean };
type Entry = DirectKind & { method: string; pattern: RegExp; names: string[]; serve: DirectServe };

const key = Symbol.for("conveyor.sse.directRoutes");
const store = globalThis as unknown as { [key]?: Map<string, Entry> };

export function registerDirectRoute(
  pattern: RegExp,
  names: string[],
  serve: DirectServe,
  opts: DirectKind & { method?: string } = { kind: "stream" },
): void {
  const method = opts.method ?? "GET";
  (store[key] ??= new Map()).set(`${method} ${pattern.source}`, {
    method,
    kind: opts.kind,
    public: opts.public,
    pattern,
    names,
    serve,
  });
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

/** 400 for a malformed path: in the API's error shape under /api/, in words for a page. */
async function badPath(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const api = (req.url ?? "/").startsWith("/api/");
  const body = api
    ? JSON.stringify({
        error: {
          code: "invalid_input",
          message: "Invalid input: path: malformed percent-encoding",
          fields: [{ path: "(path)", message: "malformed percent-encoding" }],
        },
      })
    : "Bad request: the address has a malformed percent-encoding (%).\n";
  res
    .writeHead(400, {
      "Content-Type": api ? "application/json" : "text/plain; charset=utf-8",
      "Content-Length": Buffer.byteLength(body),
      "X-Content-Type-Options": "nosniff",
    })
    .end(body);
}

/**
 * The direct route for a request to the server `npm start` runs, as scripts/serve.ts dispatches:
 * its kind switched on, and a Bearer token unless the route is public; a 400 for any path with a
 * malformed escape. Null: through Next.js.
 */
export function directRouteFor(
  req: IncomingMessage,
  on: { stream: boolean; api: boolean },
): ((req: IncomingMessage, res: ServerResponse) => Promise<void>) | null {
  if (malformedPath(req.url ?? "/")) return badPath;
  const bearer = Boolean(req.headers.authorization);
  return directRoute(req.url ?? "/", req.method, (r) => on[r.kind] && (bearer || Boolean(r.public)));
}
