import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { Validator } from "@seriousme/openapi-schema-validator";
import { openApiDocument, undocumentedRoutes } from "@/lib/openapi/document";
import { compileResponseValidator } from "../helpers/openapi";

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"] as const;

/** Every app/api/**\/route.ts: its folder path (as Next.js spells it) and the HTTP methods it exports. */
function routeFiles(dir = "app/api"): { route: string; methods: string[] }[] {
  const out: { route: string; methods: string[] }[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...routeFiles(full));
    else if (entry.name === "route.ts") {
      const source = readFileSync(full, "utf8");
      const methods = METHODS.filter((m) =>
        new RegExp(`^export\\s+(?:const\\s+${m}\\b|(?:async\\s+)?function\\s+${m}\\b)`, "m").test(source),
      );
      out.push({ route: "/" + path.relative("app", dir).split(path.sep).join("/"), methods });
    }
  }
  return out;
}

/** The document paths a route folder answers: `[id]` is `{id}`; `[[...rest]]` is the folder itself and one `{param}` below it. */
function documentPathsOf(route: string): RegExp {
  const segments = route.split("/").map((seg) => {
    if (/^\[\[\.\.\.\w+\]\]$/.test(seg)) return "(?:/\\{\\w+\\})?";
    if (/^\[\w+\]$/.test(seg)) return `/\\{${seg.slice(1, -1)}\\}`;
    return seg ? `/${seg.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}` : "";
  });
  return new RegExp(`^${segments.join("")}$`);
}

const doc = openApiDocument();
const documented = Object.entries(doc.paths ?? {}) as [string, Record<string, unknown>][];

test("every route under app/api, with each method it exports, is in the OpenAPI document", () => {
  const routes = routeFiles();
  assert.ok(routes.length > 50, `found ${routes.length} route files`);
  const missing: string[] = [];
  for (const { route, methods } of routes) {
    if (route in undocumentedRoutes) continue;
    assert.ok(methods.length > 0, `${route}/route.ts exports no HTTP method`);
    const pattern = documentPathsOf(route);
    const paths = documented.filter(([p]) => pattern.test(p));
    for (const method of methods) {
      if (!paths.some(([, item]) => method.toLowerCase() in item)) missing.push(`${method} ${route}`);
    }
  }
  assert.deepEqual(
    missing,
    [],
    "describe these where their route is owned: a workload's openapi.ts, lib/jobs/openapi.ts or lib/openapi/",
  );
});

test("every path in the document is a route that exports its methods (nothing stale)", () => {
  const routes = routeFiles().map((r) => ({ ...r, pattern: documentPathsOf(r.route) }));
  const stale: string[] = [];
  for (const [p, item] of documented) {
    const route = routes.find((r) => r.pattern.test(p));
    for (const method of Object.keys(item).filter((k) => METHODS.includes(k.toUpperCase() as never))) {
      if (!route?.methods.includes(method.toUpperCase())) stale.push(`${method.toUpperCase()} ${p}`);
    }
  }
  assert.deepEqual(stale, []);
});

test("the document is valid OpenAPI 3.1", async () => {
  const validator = new Validator();
  const result = await validator.validate(JSON.parse(JSON.stringify(doc)));
  assert.equal(validator.version, "3.1");
  assert.deepEqual(result, { valid: true });
});

test("every operation has a success answer, and every JSON answer's schema compiles as JSON Schema 2020-12", () => {
  let schemas = 0;
  for (const [p, item] of documented) {
    for (const [method, op] of Object.entries(item) as [string, { responses?: Record<string, unknown> }][]) {
      const statuses = Object.keys(op.responses ?? {});
      assert.ok(
        statuses.some((s) => s.startsWith("2")),
        `${method.toUpperCase()} ${p} has no 2xx answer`,
      );
      for (const status of statuses) {
        const validate = compileResponseValidator(doc, p, method, status);
        if (validate) schemas++;
      }
    }
  }
  assert.ok(schemas > 100, `compiled ${schemas} response schemas`);
});

test("a response is checked against its schema: a job with a field missing or a wrong type fails, naming it", () => {
  const validate = compileResponseValidator(doc, "/api/v1/jobs/{id}", "get", "200")!;
  assert.equal(validate({ id: "x" }), false);
  assert.match(JSON.stringify(validate.errors), /required/);
  const error = compileResponseValidator(doc, "/api/v1/jobs/{id}", "get", "404")!;
  assert.equal(error({ error: { code: "not_found", message: "Job not found" } }), true);
  assert.equal(error({ error: { code: "nope", message: "x" } }), false);
});

test("the document says which routes it leaves out, and why", () => {
  for (const [route, why] of Object.entries(undocumentedRoutes)) {
    assert.ok(why.length > 20, route);
    assert.ok(
      routeFiles().some((r) => r.route === route),
      `${route} is no longer a route`,
    );
  }
});
