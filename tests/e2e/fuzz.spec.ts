import { readFileSync, readdirSync, statSync } from "node:fs";
import path from "node:path";
import { expect, test } from "./fixtures";
import fc from "fast-check";
import { cliToken, sql, storageStateFor } from "./helpers";

// Property-based: generated bodies, query strings, headers and ids go to every route of the API as
// every role. Whatever arrives, the answer is never a 5xx, and every 400 names the field it refuses.
// Runs in its own project (playwright.config.ts) with every queue paused, so nothing it creates runs.

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;
type Route = { pattern: string; methods: string[] };

/** Every route handler under app/ (but Auth.js's own), with the methods it exports. */
function routes(): Route[] {
  const out: Route[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const full = path.join(dir, name);
      if (statSync(full).isDirectory()) walk(full);
      else if (name === "route.ts") {
        const src = readFileSync(full, "utf8");
        const methods = METHODS.filter((m) => new RegExp(`export (const|async function) ${m}\\b`).test(src));
        const pattern = "/" + path.relative("app", path.dirname(full)).split(path.sep).join("/");
        if (!pattern.startsWith("/api/auth")) out.push({ pattern, methods });
      }
    }
  };
  walk("app");
  return out;
}

const FIELDS = [
  "dataset",
  "format",
  "compression",
  "filter",
  "from",
  "to",
  "partRows",
  "csvSafe",
  "name",
  "ids",
  "action",
  "dryRun",
  "queue",
  "type",
  "tenant",
  "reason",
  "cancelRunning",
  "maxRunning",
  "weight",
  "exportRetentionDays",
  "ttlSeconds",
  "email",
  "role",
  "platformAdmin",
  "token",
  "password",
  "currentPassword",
  "newPassword",
  "scopes",
  "expiresInDays",
  "slug",
  "quotaJobsPerUser",
  "quotaExportBytes",
  "status",
  "q",
  "cursor",
  "limit",
  "errorClass",
  "fingerprint",
  "cron",
  "timezone",
  "task",
  "input",
  "missedRunPolicy",
  "overlapPolicy",
  "catchupWindowSeconds",
  "maxCatchup",
  "startAt",
  "endAt",
  "paused",
  "runAt",
];

const junkId = fc.oneof(
  fc.uuid(),
  fc.constantFrom(
    "0",
    "-1",
    "%00",
    "..%2F..",
    "null",
    "' OR 1=1 --",
    "a".repeat(300),
    "dl_x",
    "inv_x",
    "interactive",
    "acme",
  ),
  fc.string({ maxLength: 40 }).map((s) => encodeURIComponent(s) || "x"),
);
const value = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.constantFrom("orders", "csv", "gzip", "bulk", "cancel", "read", "* * * * * *", "Europe/Berlin", "export", "all"),
);
const body = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
  fc.dictionary(fc.constantFrom(...FIELDS), value, { maxKeys: 4 }).map((v) => JSON.stringify(v)),
  fc.string({ maxLength: 200 }),
  fc.constant(""),
);
const query = fc.dictionary(
  fc.constantFrom(...FIELDS),
  fc.oneof(fc.string({ maxLength: 30 }), fc.integer().map(String)),
  {
    maxKeys: 3,
  },
);
const headers = fc.record(
  {
    "idempotency-key": fc.string({ maxLength: 250 }),
    "last-event-id": fc.oneof(fc.string({ maxLength: 20 }), fc.integer().map(String)),
    "content-type": fc.constantFrom(
      "application/json",
      "text/plain",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
    ),
    // What a client may write itself, whatever TRUST_PROXY says (scripts/serve.ts replaces them).
    "x-forwarded-for": fc.oneof(
      fc.string({ maxLength: 60 }),
      fc
        .array(fc.oneof(fc.ipV4(), fc.ipV6(), fc.constantFrom("unknown", "[::1]:80", "::ffff:10.0.0.1")), {
          maxLength: 4,
        })
        .map((a) => a.join(", ")),
    ),
    "x-forwarded-host": fc.oneof(fc.string({ maxLength: 60 }), fc.domain()),
    "x-forwarded-proto": fc.constantFrom("https", "http", "ftp", "", "https, http"),
  },
  { requiredKeys: [] },
);

test.setTimeout(15 * 60_000);

test("no generated request to any route, as any role, answers 5xx; every 400 names its field", async () => {
  const base = test.info().project.use.baseURL!;
  const [acmeJob] = await sql<{ id: string }>(
    "SELECT j.id FROM jobs j JOIN tenants t ON t.id = j.tenant_id WHERE t.slug = 'acme' ORDER BY j.created_at LIMIT 1",
  );
  const sessionCookie = (who: string) =>
    (JSON.parse(readFileSync(storageStateFor(who), "utf8")) as { cookies: { name: string; value: string }[] }).cookies
      .map((c) => `${c.name}=${c.value}`)
      .join("; ");
  const roles: Record<string, Record<string, string>> = {
    anonymous: {},
    member: { authorization: `Bearer ${cliToken("gus@globex.test")}` },
    operator: { authorization: `Bearer ${cliToken("gina@globex.test")}` },
    admin: { authorization: `Bearer ${cliToken("root@conveyor.test")}` },
    "member session": { cookie: sessionCookie("ada@acme.test"), origin: base },
    // People management refuses tokens: its routes are reached with a session only.
    "admin session": { cookie: sessionCookie("root@conveyor.test"), origin: base },
  };
  const admin = roles.admin!;
  // Nothing the fuzz creates may run: every queue paused for everyone, for the length of the test.
  const pauses: string[] = [];
  for (const queue of ["interactive", "bulk", "webhooks"]) {
    const res = await fetch(`${base}/api/v1/ops/pauses`, {
      method: "POST",
      headers: { ...admin, "content-type": "application/json" },
      body: JSON.stringify({ queue, reason: "fuzz test" }),
    });
    if (res.status === 201) pauses.push(((await res.json()) as { id: string }).id);
  }
  const started = new Date();
  const failures: string[] = [];
  let requests = 0;
  try {
    for (const route of routes()) {
      for (const method of route.methods) {
        for (const [role, auth] of Object.entries(roles)) {
          await fc.assert(
            fc.asyncProperty(
              fc.array(junkId, { minLength: 3, maxLength: 3 }),
              body,
              query,
              headers,
              fc.boolean(),
              async (ids, b, q, h, realId) => {
                let n = 0;
                const p = route.pattern.replace(/\[[^\]]+\]/g, () => {
                  const id = realId && n === 0 && acmeJob ? acmeJob.id : (ids[n] ?? "x");
                  n++;
                  return id;
                });
                const url = `${base}${p}?${new URLSearchParams(q)}`;
                const ac = new AbortController();
                const timer = setTimeout(() => ac.abort(), 15_000);
                try {
                  const res = await fetch(url, {
                    method,
                    headers: { ...h, ...auth },
                    body: method === "GET" || method === "DELETE" ? undefined : b,
                    signal: ac.signal,
                    redirect: "manual",
                  });
                  requests++;
                  const type = res.headers.get("content-type") ?? "";
                  let text = "";
                  // An event stream or a file: the status and headers say enough.
                  if (type.includes("text/event-stream") || res.headers.has("content-disposition"))
                    await res.body?.cancel();
                  else text = await res.text();
                  if (res.status >= 500)
                    failures.push(`${method} ${p} as ${role} → ${res.status} ${text.slice(0, 200)}`);
                  if (res.status === 400) {
                    const fields = (JSON.parse(text) as { error?: { fields?: { path: unknown }[] } }).error?.fields;
                    if (!fields?.length || fields.some((f) => typeof f.path !== "string" || !f.path)) {
                      failures.push(`${method} ${p} as ${role} → 400 without a field: ${text.slice(0, 200)}`);
                    }
                  }
                } finally {
                  clearTimeout(timer);
                }
              },
            ),
            { numRuns: 6, seed: 4242 },
          );
        }
      }
    }
  } finally {
    // Undo what the fuzz may have changed that later tests rely on: its schedules, jobs, pauses, caps and quotas.
    await sql("DELETE FROM schedules WHERE created_at >= $1", [started]);
    await sql(
      `UPDATE jobs SET status = 'cancelled', finished_at = now(), error_class = 'cancelled', error_message = 'fuzz'
       WHERE created_at >= $1 AND status IN ('queued', 'scheduled', 'retrying')`,
      [started],
    );
    await sql(
      "UPDATE queue_pauses SET resumed_at = now() WHERE resumed_at IS NULL AND created_at >= $1 AND NOT (id = ANY($2::uuid[]))",
      [started, pauses],
    );
    await sql("DELETE FROM tenant_queue_limits WHERE updated_at >= $1", [started]);
    await sql("UPDATE tenants SET quota_jobs_per_user = NULL, quota_jobs_per_tenant = NULL, quota_export_bytes = NULL");
    for (const id of pauses) await fetch(`${base}/api/v1/ops/pauses/${id}`, { method: "DELETE", headers: admin });
  }
  console.log(`[fuzz] ${requests} requests`);
  expect(failures.slice(0, 20)).toEqual([]);
  expect(requests).toBeGreaterThan(1000);
});
