import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { capUndeclaredBody, needsBodyCap } from "@/lib/http/body-cap";

const MAX = 1024;
let server: http.Server;
let base: string;
/** What the stand-in for Next.js received: its path, its declared length, the body it read. */
const handed: { url: string; length: string | undefined; body: string }[] = [];

before(async () => {
  // As scripts/serve.ts dispatches; the stand-in for Next.js reads the body as Next.js does (async iteration).
  server = http.createServer((req, res) => {
    const next = async (request: http.IncomingMessage) => {
      let body = "";
      for await (const chunk of request) body += String(chunk);
      handed.push({ url: request.url!, length: request.headers["content-length"], body });
      res.writeHead(200).end("ok");
    };
    if (needsBodyCap(req)) void capUndeclaredBody(req, res, MAX).then((capped) => capped && next(capped));
    else void next(req);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => {
  server.closeAllConnections();
  server.close();
});

/** A POST with a body of no declared length (chunked), sent in `chunks`. */
function postChunked(path: string, chunks: string[]): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}${path}`, { method: "POST" }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode!, body }));
    });
    req.on("error", (e: NodeJS.ErrnoException) =>
      e.code === "ECONNRESET" || e.code === "EPIPE" ? undefined : reject(e),
    );
    for (const c of chunks) req.write(c);
    req.end();
  });
}

test("a body of no declared length past the limit answers 413 before it is handed on; within it, it goes on whole", async () => {
  const big = await postChunked(
    "/login",
    Array.from({ length: 64 }, () => "x".repeat(512)),
  );
  assert.equal(big.status, 413);
  assert.match(big.body, /must be at most 1024 bytes/);
  assert.equal(handed.length, 0, "nothing was handed on");

  const small = await postChunked("/api/auth/callback/credentials", ["email=a%40b.c", "&password=", "x".repeat(500)]);
  assert.equal(small.status, 200);
  assert.deepEqual(handed, [
    {
      url: "/api/auth/callback/credentials",
      length: String(13 + 10 + 500),
      body: `email=a%40b.c&password=${"x".repeat(500)}`,
    },
  ]);
});

test("only bodies of no declared length on the paths Next.js's proxy buffers are read here", () => {
  const req = (url: string, headers: http.IncomingHttpHeaders) => ({ url, headers }) as http.IncomingMessage;
  const chunked = { "transfer-encoding": "chunked" };
  assert.equal(needsBodyCap(req("/login", chunked)), true);
  assert.equal(needsBodyCap(req("/api/auth/signin", chunked)), true);
  assert.equal(needsBodyCap(req("/exports?x=1", chunked)), true);
  // The API reads its own bodies, capped; uploads stream to storage.
  assert.equal(needsBodyCap(req("/api/v1/exports", chunked)), false);
  assert.equal(needsBodyCap(req("/api/v1/uploads/abc", chunked)), false);
  assert.equal(needsBodyCap(req("/api/authors", chunked)), false);
  // A declared length is refused from the header by proxy.ts; no body, nothing to read.
  assert.equal(needsBodyCap(req("/login", { "content-length": "10" })), false);
  assert.equal(needsBodyCap(req("/login", {})), false);
});
