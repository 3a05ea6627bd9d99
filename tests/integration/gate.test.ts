/**
 * The gate of the server `npm start` runs (lib/http/gate.ts), ahead of every route: refusals from
 * memory and turns per user. Here a node:http server does what scripts/serve.ts does — record the
 * client, admit through the gate, then dispatch to the routes' own handlers (lib/http/api-direct.ts)
 * — and counts what the gate let through, so a test sees which requests reached a route (the only
 * way to a query) and which were answered before one. One path, `/api/v1/test-hold`, is held open
 * by the test until it lets go: a user's turn taken for as long as the test wants, with no timing.
 */
import { after, afterEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { forgetRefusals } from "@/lib/auth/rate-limit";
import { rememberRefusal, sessionAlias } from "@/lib/auth/refusal-memory";
import { createApiTokenForEmail } from "@/lib/auth/tokens";
import { pool } from "@/lib/db";
import { resetEnvCache } from "@/lib/env";
import { recordForwarded } from "@/lib/http/client";
import { admit, gateCounts, type GateOptions } from "@/lib/http/gate";
import { directRouteFor } from "@/lib/http/sse-direct-routes";
import { useTestDatabase } from "../helpers/db";

let server: http.Server;
let base: string;
let ada: string;
let ada2: string;
let gus: string;
/** What the gate let on: `path|authorization`. */
const reached: string[] = [];
const gate: GateOptions = { concurrency: 2, queue: 200, production: false };
let letGo: (() => void)[] = [];

useTestDatabase({ setup: start });

async function start(): Promise<void> {
  await import("@/app/api/v1/exports/route");
  await import("@/app/api/v1/jobs/route");
  server = http.createServer((req, res) => {
    recordForwarded(req);
    admit(req, res, gate, () => {
      reached.push(`${req.url}|${req.headers.authorization ?? ""}`);
      if (req.url === "/api/v1/test-hold") {
        letGo.push(() => res.writeHead(200).end("held"));
        return;
      }
      const direct = directRouteFor(req, { stream: true, api: true });
      if (direct) void direct(req, res);
      else res.writeHead(599).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  ada = await createApiTokenForEmail("ada@acme.test", "gate", "acme");
  ada2 = await createApiTokenForEmail("ada@acme.test", "gate-2", "acme");
  gus = await createApiTokenForEmail("gus@globex.test", "gate", "globex");
}

after(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

afterEach(async () => {
  for (const f of letGo) f();
  letGo = [];
  delete process.env.RATE_LIMIT_WRITES_PER_MINUTE;
  resetEnvCache();
  Object.assign(gate, { concurrency: 2, queue: 200, holdMs: 0 });
  await pool().query("DELETE FROM rate_limits");
  forgetRefusals();
});

type Answer = { status: number; headers: http.IncomingHttpHeaders; body: string };

/** One request on a connection of its own (as many concurrent clients would). */
function call(method: string, path: string, headers: Record<string, string>, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${base}${path}`,
      { method, agent: false, headers: { ...(body ? { "Content-Type": "application/json" } : {}), ...headers } },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (text += c));
        res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}
const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
const createExport = (token: string) =>
  call("POST", "/api/v1/exports", bearer(token), JSON.stringify({ dataset: "customers" }));

describe("refusals from memory", () => {
  test("one member's 20-concurrent flood: another tenant's member is answered while it runs; the refused flood never reaches a route", async () => {
    process.env.RATE_LIMIT_WRITES_PER_MINUTE = "5";
    resetEnvCache();
    const before = { ...gateCounts };
    reached.length = 0;
    let floodSent = 0;
    let floodRunning = true;
    const floodStatuses = new Map<number, number>();
    let firstFromMemory: Answer | undefined;
    const flood = Array.from({ length: 20 }, async () => {
      // Bounded: it runs until the other member is done, or 5,000 requests.
      while (floodRunning && floodSent < 5_000) {
        floodSent++;
        const a = await createExport(ada);
        floodStatuses.set(a.status, (floodStatuses.get(a.status) ?? 0) + 1);
        if (a.status === 429 && !firstFromMemory && gateCounts.refusedFromMemory > before.refusedFromMemory)
          firstFromMemory = a;
      }
    });
    // The flood is past its budget: its refusals come from memory from now on.
    while (gateCounts.refusedFromMemory === before.refusedFromMemory && floodSent < 5_000)
      await new Promise((r) => setImmediate(r));
    const gusAnswers: Answer[] = [];
    for (let i = 0; i < 3; i++) gusAnswers.push(await createExport(gus));
    const runningWhenAnswered = floodRunning;
    floodRunning = false;
    await Promise.all(flood);

    assert.equal(runningWhenAnswered, true);
    assert.deepEqual(
      gusAnswers.map((a) => a.status),
      [202, 202, 202],
      gusAnswers.map((a) => a.body).join("\n"),
    );
    const refusedFromMemory = gateCounts.refusedFromMemory - before.refusedFromMemory;
    assert.ok(refusedFromMemory > 0);
    // Every request either reached a route or was answered by the gate: the refused ones did no route
    // work and so no query (the gate imports nothing that reaches the database).
    const adaReached = reached.filter((r) => r === `/api/v1/exports|Bearer ${ada}`).length;
    assert.equal(adaReached + refusedFromMemory + (gateCounts.refusedQueueFull - before.refusedQueueFull), floodSent);
    // Its budget of 5 (a sixth after 12 s, should the machine be that slow), the rest refused.
    assert.ok((floodStatuses.get(202) ?? 0) <= 6, `the flood's answers: ${JSON.stringify([...floodStatuses])}`);
    assert.ok((floodStatuses.get(429) ?? 0) > 0);
    // The gate's 429 is the route's: Retry-After, the rate-limit headers, the error's shape.
    assert.ok(firstFromMemory, "a refusal answered from memory");
    assert.match(String(firstFromMemory.headers["retry-after"]), /^[1-9]\d*$/);
    assert.match(String(firstFromMemory.headers["ratelimit-policy"]), /^"writes";q=5;w=60$/);
    assert.ok(firstFromMemory.headers["x-request-id"]);
    assert.equal(firstFromMemory.headers["x-content-type-options"], "nosniff");
    const error = (JSON.parse(firstFromMemory.body) as { error: { code: string; details: { budget: string } } }).error;
    assert.equal(error.code, "rate_limited");
    assert.equal(error.details.budget, "writes");
  });

  test("another token of the same user is refused from memory once seen; a session cookie by its hash", async () => {
    process.env.RATE_LIMIT_WRITES_PER_MINUTE = "2";
    resetEnvCache();
    // ada's second token authenticates once (the process learns whose it is), then ada spends her budget.
    assert.equal((await call("GET", "/api/v1/jobs?limit=1", bearer(ada2))).status, 200);
    for (let i = 0; i < 3; i++) await createExport(ada);
    reached.length = 0;
    const refused = await createExport(ada2);
    assert.equal(refused.status, 429);
    assert.deepEqual(reached, [], "refused before any route");
    // Reads are a budget of their own: still allowed.
    assert.equal((await call("GET", "/api/v1/jobs?limit=1", bearer(ada2))).status, 200);

    const cookie = "theme=dark; authjs.session-token=abc.def.ghi";
    assert.equal(sessionAlias(cookie), sessionAlias("authjs.session-token=abc.def.ghi; other=1"));
    assert.equal(sessionAlias("theme=dark"), null);
    rememberRefusal([`reads:${sessionAlias(cookie)!}`], 5_000, 1_000, 1_200);
    reached.length = 0;
    const a = await call("GET", "/api/v1/jobs", { cookie });
    assert.equal(a.status, 429);
    assert.equal(Number(a.headers["retry-after"]), 1, "never longer than the memory's bound");
    assert.deepEqual(reached, []);
  });
});

describe("held refusals", () => {
  test("a refusal from memory is held (REFUSAL_HOLD_MS), never past the time the budget frees; another user is answered meanwhile", async () => {
    const cookie = "authjs.session-token=held.flood.token";
    // Postgres refused this session's reads for the next 3 s; the process holds such refusals 2 s.
    rememberRefusal([`reads:${sessionAlias(cookie)!}`], 3_000, 3_000, 1_200);
    Object.assign(gate, { holdMs: 2_000 });
    const heldBefore = gateCounts.held;
    reached.length = 0;
    let answered: Answer | null = null;
    const refused = call("GET", "/api/v1/jobs", { cookie }).then((a) => (answered = a));
    while (gateCounts.held === heldBefore) await new Promise((r) => setImmediate(r));
    // While the flood's request is held, another tenant's member is answered by the route.
    const other = await call("GET", "/api/v1/jobs?limit=1", bearer(gus));
    assert.equal(other.status, 200);
    assert.equal(answered, null, "the refusal is still held after another user's request was answered");
    const a = await refused;
    assert.equal(a.status, 429);
    assert.match(String(a.headers["retry-after"]), /^[12]$/, "Retry-After counts from the answer, not the arrival");
    assert.deepEqual(
      reached.filter((r) => !r.endsWith(`Bearer ${gus}`)),
      [],
      "the held request never reached a route",
    );

    // A budget that frees sooner than the hold: answered when it frees, not later.
    rememberRefusal([`reads:${sessionAlias(cookie)!}`], 0, 0, 1_200);
    const heldNow = gateCounts.held;
    const free = await call("GET", "/api/v1/jobs?limit=1", { cookie });
    assert.notEqual(free.status, 429, "a budget Postgres no longer refuses goes on to the route");
    assert.equal(gateCounts.held, heldNow);
  });
});

describe("quota refusals from memory", () => {
  test("a create refused for its quota is refused again from memory on that route only, with the route's answer", async () => {
    process.env.QUOTA_JOBS_PER_USER = "1";
    resetEnvCache();
    try {
      await pool().query("DELETE FROM jobs WHERE created_by_id = (SELECT id FROM users WHERE email = 'ada@acme.test')");
      const first = await createExport(ada);
      assert.equal(first.status, 202, first.body);
      reached.length = 0;
      const byRoute = await createExport(ada);
      assert.equal(byRoute.status, 429);
      assert.equal(reached.length, 1, "the first refusal is the route's (Postgres counted the jobs)");
      const before = gateCounts.refusedFromMemory;
      const fromMemory = await createExport(ada);
      assert.equal(gateCounts.refusedFromMemory, before + 1, "the next one is answered by the gate");
      assert.equal(reached.length, 1, "without reaching a route");
      assert.equal(fromMemory.status, 429);
      assert.deepEqual(JSON.parse(fromMemory.body), JSON.parse(byRoute.body), "the same answer: quota, limit, use");
      assert.equal((JSON.parse(fromMemory.body) as { error: { code: string } }).error.code, "quota_exceeded");
      assert.notEqual(fromMemory.headers["x-request-id"], byRoute.headers["x-request-id"]);
      // Another route of the same user (cancelling the job, which frees the quota) is not refused.
      const id = (JSON.parse(first.body) as { id: string }).id;
      const cancel = await call("POST", `/api/v1/jobs/${id}/cancel`, bearer(ada));
      assert.notEqual(cancel.status, 429, cancel.body);
      assert.equal(reached.at(-1), `/api/v1/jobs/${id}/cancel|Bearer ${ada}`);
    } finally {
      delete process.env.QUOTA_JOBS_PER_USER;
      resetEnvCache();
    }
  });
});

describe("turns", () => {
  test("a user's requests past WEB_USER_CONCURRENCY wait; another user's go at once; past the queue, 429", async () => {
    Object.assign(gate, { concurrency: 1, queue: 1 });
    const held = call("GET", "/api/v1/test-hold", bearer(ada));
    while (letGo.length === 0) await new Promise((r) => setImmediate(r));
    const queuedBefore = gateCounts.queued;
    // ada's next request waits for her turn…
    const waiting = call("GET", "/api/v1/jobs?limit=1", bearer(ada));
    while (gateCounts.queued === queuedBefore) await new Promise((r) => setImmediate(r));
    // …one more is past her queue…
    const full = await call("GET", "/api/v1/jobs?limit=1", bearer(ada));
    assert.equal(full.status, 429);
    assert.match(full.body, /at most 1 running and 1 waiting per user/);
    // …while gus is answered, with ada's turn still held.
    const other = await call("GET", "/api/v1/jobs?limit=1", bearer(gus));
    assert.equal(other.status, 200);
    assert.equal(letGo.length, 1);
    assert.ok(!reached.includes(`/api/v1/jobs?limit=1|Bearer ${ada}`), "ada's waiting request has not run");
    letGo.shift()!();
    assert.equal((await held).status, 200);
    assert.equal((await waiting).status, 200);
  });
});
