/**
 * The event-stream routes the server `npm start` runs (scripts/serve.ts) answers itself,
 * on the socket, instead of through Next.js's piping of a ReadableStream (see
 * lib/http/sse-direct.ts). A route registers here when Next.js first loads its module; until
 * then its requests go through Next.js as any other. Process-wide (a global), and free of
 * imports: scripts/serve.ts reads it from outside the app's bundle.
 */
import type { IncomingMessage, ServerResponse } from "node:http";

export type DirectServe = (req: IncomingMessage, res: ServerResponse, params: Record<string, string>) => Promise<void>;
type Entry = { pattern: RegExp; names: string[]; serve: DirectServe };

const key = Symbol.for("conveyor.sse.directRoutes");
const store = globalThis as unknown as { [key]?: Map<string, Entry> };

export function registerDirectRoute(pattern: RegExp, names: string[], serve: DirectServe): void {
  (store[key] ??= new Map()).set(pattern.source, { pattern, names, serve });
}

/** The registered route serving a GET of `url` (path and query), with its path parameters; null if none. */
export function directRoute(url: string): ((req: IncomingMessage, res: ServerResponse) => Promise<void>) | null {
  const routes = store[key];
  if (!routes) return null;
  const q = url.indexOf("?");
  const pathname = q === -1 ? url : url.slice(0, q);
  for (const { pattern, names, serve } of routes.values()) {
    const m = pattern.exec(pathname);
    if (!m) continue;
    const params = Object.fromEntries(names.map((n, i) => [n, decodeURIComponent(m[i + 1]!)]));
    return (req, res) => serve(req, res, params);
  }
  return null;
}
