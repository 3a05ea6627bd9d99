/**
 * Bodies of no declared length (chunked) on the paths Next.js's proxy runs on (pages, server
 * actions, /api/auth), read by the server `npm start` runs (scripts/serve.ts) before Next.js
 * sees them. Next.js clones the body of every request its proxy runs on and holds up to 10 MB of
 * it in memory; a declared length past MAX_BODY_BYTES is refused by proxy.ts from the header, but
 * an undeclared one was buffered whole. Here at most MAX_BODY_BYTES + 1 bytes are read: past the
 * limit the answer is 413 and the connection closes; within it, a copy of the request goes on with
 * the bytes read as its body, now of a declared length. The API's other routes read their bodies themselves,
 * capped (lib/http/route.ts), and the uploads (tus) stream to storage: they are left alone.
 */
import { IncomingMessage, type ServerResponse } from "node:http";

/** Whether the request carries a body of no declared length on a path whose body Next.js would buffer. */
export function needsBodyCap(req: IncomingMessage): boolean {
  if (req.headers["content-length"] !== undefined || req.headers["transfer-encoding"] === undefined) return false;
  const url = req.url ?? "/";
  return !url.startsWith("/api/") || /^\/api\/auth(?:[/?]|$)/.test(url);
}

/** The request again, its body the bytes read (now of a declared length): what Next.js is handed. */
function withBody(req: IncomingMessage, body: Buffer): IncomingMessage {
  const copy = new IncomingMessage(req.socket);
  copy.method = req.method;
  copy.url = req.url;
  copy.httpVersionMajor = req.httpVersionMajor;
  copy.httpVersionMinor = req.httpVersionMinor;
  copy.httpVersion = req.httpVersion;
  copy.headers = { ...req.headers, "content-length": String(body.length) };
  delete copy.headers["transfer-encoding"];
  copy.rawHeaders = Object.entries(copy.headers).flatMap(([k, v]) =>
    (Array.isArray(v) ? v : [String(v)]).flatMap((x) => [k, x]),
  );
  copy.complete = true;
  if (body.length) copy.push(body);
  copy.push(null);
  return copy;
}

/**
 * Reads a body of no declared length, at most `max` bytes: the request to hand on (the same one,
 * its body the bytes read); null when it was answered 413 (the connection closes).
 */
export function capUndeclaredBody(
  req: IncomingMessage,
  res: ServerResponse,
  max: number,
): Promise<IncomingMessage | null> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= max) return void chunks.push(chunk);
      cleanup();
      const body = JSON.stringify({
        error: {
          code: "payload_too_large",
          message: `Invalid input: body: must be at most ${max} bytes`,
          fields: [{ path: "(body)", message: `must be at most ${max} bytes` }],
        },
      });
      res.shouldKeepAlive = false;
      res
        .writeHead(413, {
          "Content-Type": "application/json",
          "Content-Length": Buffer.byteLength(body),
          Connection: "close",
          "X-Content-Type-Options": "nosniff",
        })
        .end(body, () => req.destroy());
      resolve(null);
    };
    const onEnd = () => {
      cleanup();
      resolve(withBody(req, Buffer.concat(chunks)));
    };
    const onError = () => {
      cleanup();
      req.destroy();
      resolve(null);
    };
    req.on("data", onData);
    req.once("end", onEnd);
    req.once("error", onError);
  });
}
