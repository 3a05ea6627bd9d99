/**
 * The API's hot routes answered by the server `npm start` runs (scripts/serve.ts) itself, once
 * Next.js has loaded their modules: creating an export, reading jobs, the health check.
 *
 * Why: bench:api put Next.js's own share of a request (its router, the request and response
 * wrappers, compressing every answer whose length it does not know) at 3 ms for `GET /api/health`
 * and 6-7 ms for `POST /api/v1/exports`, whose handler takes 4.5 ms: more than the create itself
 * (docs/BENCHMARKS.md, "Accepting a job"). Here the very same route handler runs (authentication,
 * scopes, rate limits, validation, the request log and span, the error answers) on a Fetch API
 * request made from the node:http one, and its answer is written with its length (gzipped only
 * from GZIP_FROM_BYTES on, for a client that accepts it).
 * Only requests with a Bearer token (or to a public route): a session cookie is read by Auth.js's
 * auth(), which needs Next.js's request scope. The headers next.config.ts gives API answers are
 * added here (lib/http/security-headers.ts). API_DIRECT=0 sends everything through Next.js.
 */
import type { IncomingMessage } from "node:http";
import { promisify } from "node:util";
import { gzip } from "node:zlib";
import type { PathParams } from "../api-doc";
import { env } from "../env";
import { apiAnswerHeaders } from "./security-headers";
import { registerDirectRoute, type DirectOperation } from "./sse-direct-routes";
import { toRequest } from "./sse-direct";

const gzipped = promisify(gzip);
/** Answers at least this long are gzipped for a client that accepts it. */
export const GZIP_FROM_BYTES = 8 * 1024;

type RouteHandler<P> = (req: Request, ctx: { params: Promise<P> }) => Promise<Response>;

/**
 * The body, at most `max` + 1 bytes of it: past the limit the rest is read and dropped, and the
 * handler (lib/http/route.ts, readBodyText) answers 413 as it does for a body it reads itself. A
 * declared length past the limit is refused from the header alone, without reading.
 */
function readCapped(req: IncomingMessage, max: number): Promise<Buffer> {
  if (Number(req.headers["content-length"] ?? 0) > max) {
    req.resume();
    return Promise.resolve(Buffer.alloc(0));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size > max) {
        req.off("data", onData);
        req.resume();
        resolve(Buffer.concat(chunks));
      }
    };
    req.on("data", onData);
    req.once("end", () => resolve(Buffer.concat(chunks)));
    req.once("error", reject);
  });
}

/**
 * Registers an API route for scripts/serve.ts: `op` is its operation, declared `direct: { kind: "api" }`
 * (its path template is the matcher, its `{names}` the parameters). Called by the route's module, with its own handler.
 */
export function serveApiDirectly<const Path extends string>(
  op: DirectOperation & { path: Path },
  handler: RouteHandler<PathParams<Path>>,
): void {
  const method = op.method.toUpperCase();
  registerDirectRoute(op, "api", async (req, res, params) => {
    res.on("error", () => {});
    try {
      const body = method === "GET" ? undefined : await readCapped(req, env().MAX_BODY_BYTES);
      const response = await handler(toRequest(req, body ? { body: new Uint8Array(body) } : {}), {
        params: Promise.resolve(params as PathParams<Path>),
      });
      let payload = Buffer.from(await response.arrayBuffer());
      const head = apiAnswerHeaders(env().NODE_ENV === "production");
      response.headers.forEach((v, k) => (head[k] = v));
      // A long answer (a page of jobs) is compressed for a client that takes gzip, as Next.js would;
      // a short one (a job, the health check) is not worth the time.
      if (payload.length >= GZIP_FROM_BYTES && /\bgzip\b/.test(String(req.headers["accept-encoding"] ?? ""))) {
        payload = await gzipped(payload, { level: 1 });
        head["content-encoding"] = "gzip";
        head.vary = "Accept-Encoding";
      }
      head["content-length"] = String(payload.length);
      res.writeHead(response.status, head).end(payload);
    } catch {
      // withPrincipal answers every error itself; this is a client gone mid-request.
      if (!res.headersSent) res.writeHead(500).end();
      else res.destroy();
    }
  });
}
