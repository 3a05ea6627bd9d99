/** The system routes, described (lib/api-doc.ts): health (a hot route, public), metrics, this document. */
import { z } from "zod";
import { answers, jsonOf, operation, type ApiDescription } from "../api-doc";

const healthSchema = z.object({ ok: z.boolean() });

export const systemOperations = {
  health: operation(
    "get",
    "/api/health",
    {
      tags: ["System"],
      summary: "Liveness and database reachability",
      security: [],
      responses: {
        "200": jsonOf(healthSchema, "Up, and the database answers"),
        "503": jsonOf(healthSchema, "The database does not answer"),
      },
    },
    { direct: { kind: "api", public: true } },
  ),
  metrics: operation("get", "/api/metrics", {
    tags: ["System"],
    summary: "Prometheus metrics",
    description: "A platform admin (session or API token), or `Authorization: Bearer $METRICS_TOKEN`.",
    security: [{ metricsToken: [] }, { bearerAuth: [] }, { sessionCookie: [] }],
    responses: answers(
      {
        "200": {
          description: "The Prometheus text exposition format",
          content: { "text/plain": { schema: z.string() } },
        },
      },
      401,
      403,
    ),
  }),
  document: operation("get", "/api/v1/openapi.json", {
    tags: ["System"],
    summary: "This document",
    security: [],
    responses: {
      "200": {
        description: "The OpenAPI 3.1 document",
        content: { "application/json": { schema: z.record(z.string(), z.unknown()) } },
      },
    },
  }),
};

export const systemApi: ApiDescription = { tags: [{ name: "System" }], operations: Object.values(systemOperations) };
