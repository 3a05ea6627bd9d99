/**
 * The direct-route table (lib/http/sse-direct-routes.ts) is generated from route metadata: the
 * operations declared `direct` (lib/api-doc.ts), whose path templates are compiled into matchers in
 * one place. Every route module that serves itself directly registers an operation so declared, and
 * every operation so declared has such a route module.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { directRoute, directRouteTable, pathMatcher } from "@/lib/http/sse-direct-routes";
import { apiOperations } from "@/lib/openapi/document";

test("a path template's matcher: one segment per {name}, the rest literal, anchored at both ends", () => {
  const { pattern, names } = pathMatcher("/api/v1/jobs/{id}/links/{linkId}");
  assert.deepEqual(names, ["id", "linkId"]);
  assert.deepEqual(pattern.exec("/api/v1/jobs/a-1/links/b%202")?.slice(1), ["a-1", "b%202"]);
  assert.equal(pattern.test("/api/v1/jobs/a/links/b/c"), false);
  assert.equal(pattern.test("/api/v1/jobs//links/b"), false);
  assert.equal(pattern.test("/x/api/v1/jobs/a/links/b"), false);
  // A dot in a template is a dot, not any character.
  assert.equal(pathMatcher("/api/v1/openapi.json").pattern.test("/api/v1/openapiXjson"), false);
  assert.deepEqual(pathMatcher("/api/health").names, []);
});

/** The route files under app/api that serve themselves directly (they call serveDirectly or serveApiDirectly). */
function directRouteFiles(dir = "app/api"): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...directRouteFiles(full));
    else if (entry.name === "route.ts" && /\bserve(Api)?Directly\(/.test(readFileSync(full, "utf8"))) out.push(full);
  }
  return out;
}

test("the table is the operations declared direct: each registered by its route module, with its kind", async () => {
  const files = directRouteFiles();
  assert.ok(files.length >= 6, `found ${files.length} route files`);
  for (const file of files) await import(path.resolve(file));
  const declared = apiOperations()
    .filter((op) => op.direct)
    .map((op) => ({
      method: op.method.toUpperCase(),
      path: op.path,
      kind: op.direct!.kind,
      ...(op.direct!.public ? { public: true } : {}),
    }));
  const byRoute = (a: { method: string; path: string }, b: { method: string; path: string }) =>
    `${a.method} ${a.path}`.localeCompare(`${b.method} ${b.path}`);
  assert.deepEqual(directRouteTable().sort(byRoute), declared.sort(byRoute));
  // Each module registers the operation of its own path (its folder, `[id]` as `{id}`).
  const folders = files.map((f) => "/" + path.relative("app", path.dirname(f)).split(path.sep).join("/"));
  const templates = folders.map((f) => f.replace(/\[(\w+)\]/g, "{$1}")).sort();
  assert.deepEqual([...new Set(directRouteTable().map((r) => r.path))].sort(), templates);
  // A registered route answers its path; its parameters decoded from the path.
  assert.ok(directRoute("/api/v1/jobs/abc/events?x=1", "GET"));
  assert.equal(directRoute("/api/v1/jobs/abc/history", "GET"), null);
  assert.equal(directRoute("/api/v1/exports", "GET"), null);
  assert.ok(directRoute("/api/v1/exports", "POST"));
});
