/**
 * Signing in over HTTP behind a load balancer. A node:http server does what
 * scripts/serve.ts does to every request (recordForwarded: the client's address,
 * host and scheme from the connection and trusted proxies' headers) and hands
 * the Auth.js routes the request, with real HTTP clients; what a test sends as
 * `X-Forwarded-For` is what a client would send through the proxy, which
 * appends the address it saw.
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { hashingLoad } from "@/lib/auth/password";
import { db, pool } from "@/lib/db";
import { env, resetEnvCache } from "@/lib/env";
import { clientAddressFrom, recordForwarded } from "@/lib/http/client";
import { assertSameOrigin } from "@/lib/http/principal";
import { toRequest } from "@/lib/http/sse-direct";
import { useTestDatabase } from "../helpers/db";

process.env.AUTH_SECRET ??= "sign-in-proxy-test-secret-not-for-production";
let server: http.Server;
let base: string;
type Route = { GET?: (req: Request) => Promise<Response>; POST?: (req: Request) => Promise<Response> };
let authRoute: Route;

useTestDatabase({ seed: 0.001, setup: start });

async function start(): Promise<void> {
  authRoute = (await import("@/app/api/auth/[...nextauth]/route")) as Route;
  server = http.createServer((req, res) => {
    recordForwarded(req);
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      void (async () => {
        const body = chunks.length ? new Uint8Array(Buffer.concat(chunks)) : undefined;
        const request = toRequest(req, body ? { body } : {});
        let response: Response;
        if (req.url === "/whoami") {
          response = Response.json({ address: clientAddressFrom(request.headers) });
        } else if (req.url === "/same-origin") {
          try {
            assertSameOrigin(request);
            response = new Response("ok");
          } catch {
            response = new Response("refused", { status: 403 });
          }
        } else {
          const handler = req.method === "POST" ? authRoute.POST : authRoute.GET;
          response = handler ? await handler(request) : new Response(null, { status: 405 });
        }
        const head: Record<string, string | string[]> = {};
        response.headers.forEach((v, k) => (head[k] = v));
        const cookies = response.headers.getSetCookie();
        if (cookies.length) head["set-cookie"] = cookies;
        res.writeHead(response.status, head).end(Buffer.from(await response.arrayBuffer()));
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

after(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

function setEnv(vars: Record<string, string | undefined>): void {
  for (const [k, v] of Object.entries(vars)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  resetEnvCache();
}

type Answer = { status: number; headers: http.IncomingHttpHeaders; body: string };

function call(method: string, path: string, headers: Record<string, string>, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}${path}`, { method, headers }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** How Auth.js answered a credentials sign-in: signed in, refused (wrong password) or throttled (a wait in force). */
type Outcome = "signed-in" | "invalid" | "throttled";

/** One sign-in through the credentials endpoint, as a browser's form would post it (its CSRF token first). */
async function signIn(email: string, password: string, forwardedFor?: string): Promise<Outcome> {
  const xff: Record<string, string> = forwardedFor ? { "x-forwarded-for": forwardedFor } : {};
  const csrf = await call("GET", "/api/auth/csrf", xff);
  const cookie = (csrf.headers["set-cookie"] ?? []).map((c) => c.split(";")[0]).join("; ");
  const { csrfToken } = JSON.parse(csrf.body) as { csrfToken: string };
  const form = new URLSearchParams({ email, password, csrfToken, callbackUrl: "/exports" }).toString();
  const res = await call(
    "POST",
    "/api/auth/callback/credentials",
    { ...xff, cookie, "content-type": "application/x-www-form-urlencoded" },
    form,
  );
  if (res.status === 429) return "throttled";
  assert.equal(res.status, 302, res.body);
  const location = String(res.headers.location);
  if (/code=throttled/.test(location)) return "throttled";
  if (/error=/.test(location)) return "invalid";
  assert.ok(
    (res.headers["set-cookie"] ?? []).some((c) => c.includes("session-token")),
    location,
  );
  return "signed-in";
}

const tally = (outcomes: Outcome[]) =>
  outcomes.reduce<Record<string, number>>((t, o) => ({ ...t, [o]: (t[o] ?? 0) + 1 }), {});

describe("behind a load balancer (TRUST_PROXY=1)", () => {
  test("100 failing sign-ins for one account, each with a different first X-Forwarded-For entry, are throttled", async () => {
    setEnv({ TRUST_PROXY: "1" });
    try {
      // The client writes what it likes left; the load balancer appends the address it saw.
      const seen = await call("GET", "/whoami", { "x-forwarded-for": "10.9.9.9, 203.0.113.50" });
      assert.equal((JSON.parse(seen.body) as { address: string }).address, "203.0.113.50");
      const outcomes: Outcome[] = [];
      for (let i = 0; i < 100; i++) {
        outcomes.push(await signIn("root@conveyor.test", `guess ${i}`, `198.51.${i}.1, 203.0.113.50`));
      }
      const counts = tally(outcomes);
      assert.ok(
        (counts.invalid ?? 0) < env().SIGN_IN_MAX_FAILURES,
        `at most ${env().SIGN_IN_MAX_FAILURES - 1} plain refusals: ${JSON.stringify(counts)}`,
      );
      assert.equal(counts.throttled, 100 - (counts.invalid ?? 0));
      const [key] = (
        await pool().query<{ failures: number }>("SELECT failures FROM sign_in_throttle WHERE key = $1", [
          "acct:root@conveyor.test ip:203.0.113.50",
        ])
      ).rows;
      assert.equal(key?.failures, env().SIGN_IN_MAX_FAILURES, "refused tries never reached the password check");
      const audit = await db().auditLog.findMany({ where: { action: "auth.sign_in_throttled" } });
      assert.ok(
        audit.some((a) => (a.details as { address: string; limit: string }).address === "203.0.113.50"),
        "the lock is in the audit log",
      );
    } finally {
      setEnv({ TRUST_PROXY: undefined });
    }
  });

  test("with two hops, the entry the outer proxy wrote counts; a list of proxies' addresses does the same", async () => {
    const whoami = async (xff: string) =>
      (JSON.parse((await call("GET", "/whoami", { "x-forwarded-for": xff })).body) as { address: string }).address;
    try {
      setEnv({ TRUST_PROXY: "2" });
      assert.equal(await whoami("6.6.6.6, 203.0.113.9, 10.0.0.2"), "203.0.113.9");
      setEnv({ TRUST_PROXY: "10.0.0.0/8,127.0.0.1" });
      assert.equal(await whoami("6.6.6.6, 203.0.113.9, 10.0.0.2"), "203.0.113.9");
      assert.equal(await whoami("10.1.1.1, 10.0.0.2"), "10.1.1.1", "all trusted: the left-most");
      setEnv({ TRUST_PROXY: "10.0.0.0/8" });
      assert.equal(await whoami("203.0.113.9"), "127.0.0.1", "a peer not in the list is the client");
      setEnv({ TRUST_PROXY: "0" });
      assert.equal(await whoami("203.0.113.9"), "127.0.0.1", "no proxy: X-Forwarded-For is ignored");
    } finally {
      setEnv({ TRUST_PROXY: undefined });
    }
  });

  test("IPv6 addresses count by their /64: rotating within it does not reset the count", async () => {
    setEnv({ TRUST_PROXY: "1" });
    try {
      const outcomes: Outcome[] = [];
      for (let i = 1; i <= 8; i++) outcomes.push(await signIn("gina@globex.test", `guess ${i}`, `2001:db8:7:7::${i}`));
      assert.deepEqual(outcomes.slice(env().SIGN_IN_MAX_FAILURES - 1), [
        "throttled",
        "throttled",
        "throttled",
        "throttled",
      ]);
      // Another /64 is another address.
      assert.equal(await signIn("gina@globex.test", "conveyor-demo", "2001:db8:7:8::1"), "signed-in");
    } finally {
      setEnv({ TRUST_PROXY: undefined });
    }
  });

  test("an account guessed at from many addresses is slowed after SIGN_IN_ACCOUNT_MAX_FAILURES, never locked out", async () => {
    setEnv({ TRUST_PROXY: "1" });
    try {
      const limit = env().SIGN_IN_ACCOUNT_MAX_FAILURES;
      const outcomes: Outcome[] = [];
      for (let i = 0; i < limit + 3; i++) {
        outcomes.push(await signIn("oscar@acme.test", `guess ${i}`, `192.0.2.${i + 1}`));
      }
      assert.deepEqual(tally(outcomes.slice(0, limit - 1)), { invalid: limit - 1 });
      assert.deepEqual(tally(outcomes.slice(limit - 1)), { throttled: 4 }, "every try past the limit waits");
      const [wait] = (
        await pool().query<{ s: number }>(
          "SELECT ceil(extract(epoch FROM locked_until - now()))::int AS s FROM sign_in_throttle WHERE key = 'acct:oscar@acme.test'",
        )
      ).rows;
      assert.ok(wait && wait.s >= 1 && wait.s <= env().SIGN_IN_ACCOUNT_MAX_DELAY_SECONDS, `a short wait: ${wait?.s}`);
      // Once the wait has passed (here: moved into the past), the owner signs in with the right password.
      await pool().query("UPDATE sign_in_throttle SET locked_until = now() - interval '1 second'");
      assert.equal(await signIn("oscar@acme.test", "conveyor-demo", "192.0.2.200"), "signed-in");
      const audit = await db().auditLog.findMany({ where: { action: "auth.sign_in_throttled" } });
      assert.ok(audit.some((a) => (a.details as { limit: string; email: string }).limit === "account"));
    } finally {
      setEnv({ TRUST_PROXY: undefined });
    }
  });
});

describe("concurrent sign-ins", () => {
  test("a burst from one address checks at most SIGN_IN_MAX_FAILURES passwords; hashing is capped", async () => {
    const hashedBefore = hashingLoad().total;
    const outcomes = await Promise.all(Array.from({ length: 30 }, (_, i) => signIn("gus@globex.test", `burst ${i}`)));
    assert.equal(outcomes.filter((o) => o === "signed-in").length, 0);
    const [key] = (
      await pool().query<{ failures: number }>("SELECT failures FROM sign_in_throttle WHERE key = $1", [
        "acct:gus@globex.test ip:127.0.0.1",
      ])
    ).rows;
    assert.equal(key?.failures, env().SIGN_IN_MAX_FAILURES, "only reserved tries were counted");
    assert.equal(hashingLoad().total - hashedBefore, env().SIGN_IN_MAX_FAILURES, "and only they were checked");
    assert.ok(hashingLoad().peak <= env().PASSWORD_HASH_CONCURRENCY, `peak ${hashingLoad().peak}`);
  });
});

describe("X-Forwarded-Host and -Proto", () => {
  test("the CSRF check believes X-Forwarded-Host only from a trusted proxy", async () => {
    const forged = { origin: "http://evil.test", "x-forwarded-host": "evil.test" };
    assert.equal((await call("POST", "/same-origin", forged)).status, 403, "no proxy: the Host header counts");
    const own = { origin: base };
    assert.equal((await call("POST", "/same-origin", own)).status, 200);
    setEnv({ TRUST_PROXY: "1" });
    try {
      const proxied = {
        origin: "https://app.example.com",
        "x-forwarded-for": "203.0.113.5",
        "x-forwarded-host": "app.example.com",
        "x-forwarded-proto": "https",
      };
      assert.equal((await call("POST", "/same-origin", proxied)).status, 200, "through the trusted proxy");
      // The client's own X-Forwarded-Host stands left of the proxy's.
      const prepended = { ...proxied, origin: "http://evil.test", "x-forwarded-host": "evil.test, app.example.com" };
      assert.equal((await call("POST", "/same-origin", prepended)).status, 403);
    } finally {
      setEnv({ TRUST_PROXY: undefined });
    }
  });
});
