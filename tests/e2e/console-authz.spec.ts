import type { APIRequestContext } from "@playwright/test";
import { expect, test } from "./fixtures";
import { cliToken, sql, storageStateFor } from "./helpers";

/**
 * Every console route × every kind of caller, with the status each must get.
 * Resources are Acme's: Globex's operator must find none of them (404).
 */
type Caller = "member" | "operator" | "otherOperator" | "admin" | "token" | "anonymous";
const callers: Caller[] = ["member", "operator", "otherOperator", "admin", "token", "anonymous"];
const ctx = {} as Record<Caller, APIRequestContext>;
let acmeJob = "";

test.beforeAll(async ({ playwright }) => {
  const baseURL = test.info().project.use.baseURL;
  const session = (email: string) => playwright.request.newContext({ baseURL, storageState: storageStateFor(email) });
  ctx.member = await session("ada@acme.test");
  ctx.operator = await session("oscar@acme.test");
  ctx.otherOperator = await session("gina@globex.test");
  ctx.admin = await session("root@conveyor.test");
  ctx.token = await playwright.request.newContext({
    baseURL,
    extraHTTPHeaders: { Authorization: `Bearer ${cliToken("oscar@acme.test")}` },
  });
  ctx.anonymous = await playwright.request.newContext({ baseURL });
  const [row] = await sql<{ id: string }>(
    `INSERT INTO jobs (id, tenant_id, type, queue, status, input, input_hash, attempts, max_attempts, error_class,
                       error_message, finished_at, updated_at)
     SELECT gen_random_uuid(), id, 'probe', 'bulk', 'failed', '{}', 'authz', 3, 3, 'retryable', 'authz matrix', now(), now()
     FROM tenants WHERE slug = 'acme' RETURNING id`,
  );
  acmeJob = row!.id;
});
test.afterAll(async () => {
  for (const c of Object.values(ctx)) await c.dispose();
});

type Row = { route: string; call: (c: APIRequestContext) => ReturnType<APIRequestContext["get"]>; expect: number[] };

const rows = (): Row[] => [
  //                                                                   member operator other admin token anon
  {
    route: "GET /ops/jobs",
    call: (c) => c.get("/api/v1/ops/jobs?tenant=acme"),
    expect: [403, 200, 404, 200, 200, 401],
  },
  {
    route: "GET /ops/jobs/{id}",
    call: (c) => c.get(`/api/v1/ops/jobs/${acmeJob}`),
    expect: [403, 200, 404, 200, 200, 401],
  },
  {
    route: "POST /ops/jobs/actions",
    call: (c) =>
      c.post("/api/v1/ops/jobs/actions", {
        data: { action: "retry_now", filter: { tenant: "acme", status: "retrying" } },
      }),
    expect: [403, 200, 404, 200, 200, 401],
  },
  {
    route: "GET /ops/dead-letters",
    call: (c) => c.get("/api/v1/ops/dead-letters?tenant=acme"),
    expect: [403, 200, 404, 200, 200, 401],
  },
  {
    route: "GET /ops/stuck",
    call: (c) => c.get("/api/v1/ops/stuck?tenant=acme"),
    expect: [403, 200, 404, 200, 200, 401],
  },
  {
    route: "GET /ops/audit",
    call: (c) => c.get("/api/v1/ops/audit?tenant=acme"),
    expect: [403, 200, 404, 200, 200, 401],
  },
  { route: "GET /ops/workers", call: (c) => c.get("/api/v1/ops/workers"), expect: [403, 403, 403, 200, 403, 401] },
  { route: "GET /ops/queues", call: (c) => c.get("/api/v1/ops/queues"), expect: [403, 200, 200, 200, 200, 401] },
  { route: "GET /ops/pauses", call: (c) => c.get("/api/v1/ops/pauses"), expect: [403, 200, 200, 200, 200, 401] },
  {
    route: "POST /ops/pauses (another tenant)",
    call: (c) => c.post("/api/v1/ops/pauses", { data: { tenant: "globex", queue: "bulk", type: "export" } }),
    // Only the platform admin may pause Globex from here; it is lifted again below.
    expect: [403, 404, 201, 201, 404, 401],
  },
  { route: "GET /api/metrics", call: (c) => c.get("/api/metrics"), expect: [403, 403, 403, 200, 403, 401] },
  {
    route: "PUT /ops/queues/bulk/tenants/acme",
    call: (c) => c.put("/api/v1/ops/queues/bulk/tenants/acme", { data: {} }),
    expect: [403, 403, 403, 200, 403, 401],
  },
  {
    route: "GET /ops/overview",
    call: (c) => c.get("/api/v1/ops/overview?tenant=acme"),
    expect: [403, 200, 404, 200, 200, 401],
  },
  { route: "GET /ops/tenants", call: (c) => c.get("/api/v1/ops/tenants"), expect: [403, 403, 403, 200, 403, 401] },
  {
    route: "PATCH /ops/tenants/acme",
    call: (c) => c.patch("/api/v1/ops/tenants/acme", { data: { exportRetentionDays: null } }),
    expect: [403, 403, 403, 200, 403, 401],
  },
];

test("every console route answers each caller as it should", async () => {
  const got: string[] = [];
  const want: string[] = [];
  for (const row of rows()) {
    for (const [i, caller] of callers.entries()) {
      const res = await row.call(ctx[caller]);
      got.push(`${row.route} as ${caller}: ${res.status()}`);
      want.push(`${row.route} as ${caller}: ${row.expect[i]}`);
      if (res.status() === 201 && row.route.startsWith("POST /ops/pauses")) {
        const { id } = (await res.json()) as { id: string };
        expect((await ctx.admin.delete(`/api/v1/ops/pauses/${id}`)).status()).toBe(200);
      }
    }
  }
  expect(got).toEqual(want);
});

test("cookie-authenticated console writes from another site are refused", async () => {
  const crossSite = { "Sec-Fetch-Site": "cross-site" };
  expect(
    (
      await ctx.operator.post("/api/v1/ops/jobs/actions", {
        headers: crossSite,
        data: { action: "cancel", ids: [acmeJob] },
      })
    ).status(),
  ).toBe(403);
  expect(
    (await ctx.operator.post("/api/v1/ops/pauses", { headers: crossSite, data: { queue: "bulk" } })).status(),
  ).toBe(403);
  expect((await ctx.operator.get("/api/v1/ops/pauses")).status()).toBe(200);
});

test("pages and API answers carry a Content-Security-Policy that allows only this origin", async () => {
  for (const path of ["/login", "/api/health"]) {
    const res = await ctx.anonymous.get(path);
    const csp = res.headers()["content-security-policy"] ?? "";
    expect(csp, path).toContain("default-src 'self'");
    expect(csp, path).toContain("frame-ancestors 'none'");
    expect(csp, path).toContain("object-src 'none'");
    expect(res.headers()["x-content-type-options"]).toBe("nosniff");
  }
});

test("Prometheus scrapes /api/metrics with the metrics token", async ({ playwright }) => {
  const scraper = await playwright.request.newContext({
    baseURL: test.info().project.use.baseURL,
    extraHTTPHeaders: { Authorization: `Bearer ${process.env.METRICS_TOKEN}` },
  });
  const res = await scraper.get("/api/metrics");
  expect(res.status()).toBe(200);
  expect(res.headers()["content-type"]).toContain("text/plain");
  const text = await res.text();
  expect(text).toContain("# TYPE conveyor_jobs gauge");
  expect(text).toMatch(/conveyor_dead_letters\{type="probe"\} [1-9]/);
  expect(text).toMatch(/conveyor_workers_live\{queues="bulk"\} 1/);
  expect(text).toContain("# TYPE conveyor_attempt_duration_seconds histogram");
  const wrong = await playwright.request.newContext({
    baseURL: test.info().project.use.baseURL,
    extraHTTPHeaders: { Authorization: "Bearer not-the-metrics-token" },
  });
  expect((await wrong.get("/api/metrics")).status()).toBe(403);
  await scraper.dispose();
  await wrong.dispose();
});
