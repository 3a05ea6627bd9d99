/**
 * The API's hot routes as the server `npm start` runs serves them once loaded: by their own
 * handlers, without Next.js's wrapping (lib/http/api-direct.ts). Here a node:http server
 * dispatches as scripts/serve.ts does (directRouteFor), with real HTTP clients; what it does not
 * serve directly answers 599, so a test sees which way a request went.
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { createApiTokenForEmail } from "@/lib/auth/tokens";
import { pool } from "@/lib/db";
import { env } from "@/lib/env";
import { requestExport } from "@/lib/exports/service";
import { directRouteFor } from "@/lib/http/sse-direct-routes";
import { API_CSP } from "@/lib/http/security-headers";
import { GZIP_FROM_BYTES } from "@/lib/http/api-direct";
import { useTestDatabase } from "../helpers/db";

let server: http.Server;
let base: string;
let ada: string;
let gus: string;

const fx = useTestDatabase({ setup: start });

async function start(): Promise<void> {
  // The route modules register themselves, as when Next.js first loads them.
  await import("@/app/api/health/route");
  await import("@/app/api/v1/exports/route");
  await import("@/app/api/v1/jobs/route");
  await import("@/app/api/v1/jobs/[id]/route");
  await import("@/app/api/v1/events/route");
  server = http.createServer((req, res) => {
    const direct = directRouteFor(req, { stream: true, api: true });
    if (direct) void direct(req, res);
    else res.writeHead(599).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  ada = await createApiTokenForEmail("ada@acme.test", "api-direct", "acme");
  gus = await createApiTokenForEmail("gus@globex.test", "api-direct", "globex");
}

after(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

type Answer = { status: number; headers: http.IncomingHttpHeaders; body: string };

/** One request over a real socket: `body` as given, or a chunked one of `chunks` (no declared length). */
function call(
  method: string,
  path: string,
  opts: { token?: string; body?: string; chunks?: string[]; headers?: Record<string, string> } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${base}${path}`,
      {
        method,
        headers: {
          ...(opts.token ? { Authorization: `Bearer ${opts.token}` } : {}),
          ...(opts.body !== undefined || opts.chunks ? { "Content-Type": "application/json" } : {}),
          ...opts.headers,
        },
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (body += c));
        res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body }));
      },
    );
    req.on("error", reject);
    if (opts.chunks) for (const c of opts.chunks) req.write(c);
    req.end(opts.body);
  });
}

const errorOf = (a: Answer) =>
  (JSON.parse(a.body) as { error: { code: string; message: string; fields?: { path: string }[] } }).error;

describe("the API's hot routes, answered by their handlers (the server npm start runs)", () => {
  test("POST /api/v1/exports: 202 with the job, its Location, the API's security headers and a declared length", async () => {
    const a = await call("POST", "/api/v1/exports", { token: ada, body: JSON.stringify({ dataset: "customers" }) });
    assert.equal(a.status, 202, a.body);
    const job = JSON.parse(a.body) as { id: string; status: string; type: string };
    assert.equal(job.type, "export");
    assert.equal(a.headers.location, `/api/v1/jobs/${job.id}`);
    assert.equal(a.headers["content-security-policy"], API_CSP);
    assert.equal(a.headers["x-content-type-options"], "nosniff");
    assert.equal(a.headers["x-frame-options"], "DENY");
    assert.ok(a.headers["x-request-id"], "the request id is answered");
    assert.equal(a.headers["content-length"], String(Buffer.byteLength(a.body)));
    assert.equal(a.headers["content-encoding"], undefined);
    const { rows } = await pool().query<{ tenant_id: string }>("SELECT tenant_id FROM jobs WHERE id = $1", [job.id]);
    assert.equal(rows[0]?.tenant_id, fx.p.acmeId, "the job is the caller's tenant's");
    // The same request again with its Idempotency-Key: the same job.
    const key = { "Idempotency-Key": "direct-1" };
    const first = await call("POST", "/api/v1/exports", { token: ada, body: '{"dataset":"orders"}', headers: key });
    const again = await call("POST", "/api/v1/exports", { token: ada, body: '{"dataset":"orders"}', headers: key });
    assert.equal(again.status, 202);
    assert.equal(again.headers["idempotent-replayed"], "true");
    assert.equal((JSON.parse(again.body) as { id: string }).id, (JSON.parse(first.body) as { id: string }).id);
  });

  test("bad input answers 4xx naming the field; a body past MAX_BODY_BYTES 413, declared or not; never a 500", async () => {
    const bad = await call("POST", "/api/v1/exports", { token: ada, body: '{"dataset":"nope"}' });
    assert.equal(bad.status, 400);
    assert.deepEqual(
      errorOf(bad).fields?.map((f) => f.path),
      ["dataset"],
    );
    const malformed = await call("POST", "/api/v1/exports", { token: ada, body: '{"dataset":' });
    assert.equal(malformed.status, 400);
    assert.match(errorOf(malformed).message, /body/);
    const big = JSON.stringify({ dataset: "customers", pad: "x".repeat(env().MAX_BODY_BYTES) });
    const declared = await call("POST", "/api/v1/exports", { token: ada, body: big });
    assert.equal(declared.status, 413);
    const chunked = await call("POST", "/api/v1/exports", {
      token: ada,
      chunks: [big.slice(0, 40_000), big.slice(40_000)],
    });
    assert.equal(chunked.status, 413);
    assert.match(errorOf(chunked).message, /at most/);
    // The connection still serves the next request.
    assert.equal((await call("GET", "/api/health")).status, 200);
  });

  test("who may: an unknown token 401; another tenant's job 404; no token goes through Next.js (a session's route)", async () => {
    assert.equal((await call("POST", "/api/v1/exports", { token: "cvy_nope", body: "{}" })).status, 401);
    const { job } = await requestExport(fx.p.ada, { dataset: "events" });
    const own = await call("GET", `/api/v1/jobs/${job.id}`, { token: ada });
    assert.equal(own.status, 200);
    assert.equal((JSON.parse(own.body) as { id: string }).id, job.id);
    const other = await call("GET", `/api/v1/jobs/${job.id}`, { token: gus });
    assert.equal(other.status, 404);
    const list = await call("GET", "/api/v1/jobs?limit=1", { token: ada });
    assert.equal(list.status, 200);
    assert.equal((JSON.parse(list.body) as { jobs: unknown[] }).jobs.length, 1);
    // Without a Bearer token the caller may be a browser session: Auth.js needs Next.js's request scope.
    assert.equal((await call("POST", "/api/v1/exports", { body: "{}" })).status, 599);
    assert.equal((await call("GET", "/api/v1/jobs")).status, 599);
    // The health check is public: answered here without one.
    const health = await call("GET", "/api/health");
    assert.deepEqual(JSON.parse(health.body), { ok: true });
    // A long answer is gzipped for a client that takes it (a page of jobs); a short one is not.
    await Promise.all(Array.from({ length: 30 }, () => requestExport(fx.p.ada, { dataset: "orders" })));
    const page = await call("GET", "/api/v1/jobs?limit=30", { token: ada, headers: { "Accept-Encoding": "gzip" } });
    assert.equal(page.headers["content-encoding"], "gzip");
    assert.equal(page.headers.vary, "Accept-Encoding");
    const plain = await call("GET", "/api/v1/jobs?limit=30", { token: ada });
    assert.equal(plain.headers["content-encoding"], undefined);
    assert.ok(Buffer.byteLength(plain.body) >= GZIP_FROM_BYTES, "the page is long enough to be gzipped");
    assert.ok(Number(page.headers["content-length"]) < Buffer.byteLength(plain.body) / 3);
    const short = await call("GET", `/api/v1/jobs/${job.id}`, { token: ada, headers: { "Accept-Encoding": "gzip" } });
    assert.equal(short.headers["content-encoding"], undefined);
    // A malformed escape in a path answers 400, with or without a token (it threw in the dispatch, which
    // would have ended the server's process; Next.js answered it 500), and the server goes on serving.
    const malformed = await call("GET", "/api/v1/jobs/%E0%A4%A", { token: ada });
    assert.equal(malformed.status, 400);
    assert.equal(errorOf(malformed).code, "invalid_input");
    assert.equal((await call("GET", "/api/v1/jobs/%E0/events", { token: "x" })).status, 400);
    const pageAnswer = await call("GET", "/jobs/%E0");
    assert.equal(pageAnswer.status, 400);
    assert.match(String(pageAnswer.headers["content-type"]), /^text\/plain/, "a page's answer is in words, not JSON");
    assert.equal((await call("GET", "/api/health")).status, 200);
    // A method the route does not register goes through Next.js.
    assert.equal((await call("DELETE", "/api/v1/exports", { token: ada })).status, 599);
  });

  test("a malformed Host answers 400 on the event stream's path and the API's, and the server goes on serving", async () => {
    for (const host of ["[", "exa mple", "a/b"]) {
      for (const path of ["/api/v1/events", "/api/v1/jobs"]) {
        const answer = await call("GET", path, { token: ada, headers: { Host: host } });
        assert.equal(answer.status, 400, `${path} with Host ${host}`);
        assert.deepEqual(
          errorOf(answer).fields?.map((f) => f.path),
          ["(host)"],
        );
      }
    }
    assert.equal((await call("GET", "/jobs", { headers: { Host: "[" } })).status, 400);
    assert.equal((await call("GET", "/api/health")).status, 200);
  });
});
