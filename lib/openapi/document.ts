/**
 * The OpenAPI 3.1 description of the REST API, assembled from the operations
 * each part of lib/ declares with the zod schemas its routes parse and answer
 * with (lib/api-doc.ts): the engine's (lib/jobs/openapi.ts), each workload's
 * from its manifest's `openapi` (lib/exports/openapi.ts, …), and the shared
 * routes described here (system, uploads, people, the operations console).
 * Served at GET /api/v1/openapi.json and rendered at /docs/api. Every route
 * under app/api is listed: a test (tests/unit/openapi.test.ts) walks app/api
 * and fails on one that is not.
 */
import { createDocument } from "zod-openapi";
import { pathsOf, type ApiDescription, type ApiOperation } from "../api-doc";
import { deadLettersApi, jobsApi } from "../jobs/openapi";
import { workloads } from "../workloads";
import { opsApi } from "./ops";
import { peopleApi } from "./people";
import { systemApi } from "./system";
import { uploadsApi } from "./uploads";

/**
 * The API's parts, in the order the reference lists their tags. (Schedules is not yet a
 * workload with a manifest: its description is added here until it is.)
 */
function descriptions(): ApiDescription[] {
  const ofWorkloads = workloads.flatMap((w) => (w.openapi ? [w.openapi] : []));
  return [jobsApi, ...ofWorkloads, uploadsApi, deadLettersApi, opsApi, peopleApi, systemApi];
}

/** Every operation of the API, as its part of lib/ declares it (the direct-route table's test reads them). */
export function apiOperations(): ApiOperation[] {
  return descriptions().flatMap((p) => p.operations);
}

/** Every tag, in order: each part's own, then any an operation names that no part declared. */
function tagsOf(parts: ApiDescription[]): { name: string; description?: string }[] {
  const tags = new Map<string, { name: string; description?: string }>();
  for (const part of parts) for (const tag of part.tags) if (!tags.has(tag.name)) tags.set(tag.name, { ...tag });
  for (const part of parts)
    for (const op of part.operations)
      for (const name of op.spec.tags ?? []) if (!tags.has(name)) tags.set(name, { name });
  return [...tags.values()];
}

/**
 * Routes deliberately left out, with why. (Auth.js's own endpoints are a
 * protocol between the sign-in page and next-auth, not an API to call.)
 */
export const undocumentedRoutes: Record<string, string> = {
  "/api/auth/[...nextauth]":
    "Auth.js internals (CSRF token, credentials callback, session, sign-out) used by the login page",
};

let cached: ReturnType<typeof createDocument> | undefined;

/** The document, built once per process. */
export function openApiDocument(): ReturnType<typeof createDocument> {
  if (cached) return cached;
  const parts = descriptions();
  cached = createDocument({
    openapi: "3.1.0",
    info: {
      title: "Conveyor API",
      version: "1",
      description:
        "Long-running work on Postgres: request exports and imports, follow jobs live, operate queues. " +
        "Authenticate with an API token (`Authorization: Bearer cvy_…`, made on the Settings page or with " +
        "`npm run cli -- tokens create --as <e-mail>`) or, from the browser, the session cookie. Every error answers " +
        "`{ error: { code, message, fields?, details? } }`. Another tenant's resources answer 404.",
    },
    servers: [{ url: "/" }],
    security: [{ bearerAuth: [] }, { sessionCookie: [] }],
    tags: tagsOf(parts),
    components: {
      securitySchemes: {
        bearerAuth: {
          type: "http",
          scheme: "bearer",
          description: "An API token (`cvy_…`); a read-only token may only read",
        },
        sessionCookie: {
          type: "apiKey",
          in: "cookie",
          name: "authjs.session-token",
          description:
            "The browser session (`__Secure-authjs.session-token` over HTTPS); writes need a same-origin request",
        },
        metricsToken: {
          type: "http",
          scheme: "bearer",
          description: "METRICS_TOKEN, for a Prometheus scraper (GET /api/metrics only)",
        },
      },
    },
    paths: pathsOf(apiOperations()),
  });
  return cached;
}
