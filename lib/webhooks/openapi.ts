/**
 * The webhooks workload's API, described (lib/api-doc.ts): endpoints with their health, their
 * deliveries, recovery, secret rotation and test events. Handed to the engine in its manifest
 * (./index.ts, `openapi`); lib/openapi/document.ts assembles.
 */
import { z } from "zod";
import {
  authed,
  body,
  created,
  cursorPage,
  id,
  idPath,
  instant,
  jsonOf,
  noContent,
  nullableInstant,
  operation,
  tenantQuery,
  type ApiDescription,
  type Out,
  type Ret,
  type Same,
} from "../api-doc";
import {
  createEndpointSchema,
  deliveryQuerySchema,
  jobDeliveryQuerySchema,
  recoverSchema,
  updateEndpointSchema,
} from "./schema";
import type {
  createEndpoint,
  getDelivery,
  getEndpoint,
  listDeliveries,
  listJobDeliveries,
  listEndpoints,
  recoverEndpoint,
  replayDelivery,
  rotateSecret,
  sendTestEvent,
} from "./service";

const endpointSchema = z
  .object({
    id,
    tenantId: id,
    tenant: z.string(),
    url: z.string(),
    description: z.string(),
    events: z.array(z.enum(["export.ready", "job.succeeded", "job.failed", "job.cancelled"])),
    rateLimitPerSecond: z.number(),
    disabled: z.boolean(),
    disabledAt: nullableInstant,
    disabledReason: z.string().nullable(),
    previousSecretExpiresAt: nullableInstant,
    createdAt: instant,
    updatedAt: instant,
    health: z.object({
      successRate24h: z.number().nullable(),
      requests24h: z.number().int(),
      circuit: z.enum(["closed", "open", "half_open"]),
      circuitRetryAt: nullableInstant,
      blockedUntil: nullableInstant,
      failingSince: nullableInstant,
      inFlight: z.number().int(),
      inFlightLimit: z.number().int().meta({
        description:
          "Requests allowed in flight now: adapts to the endpoint's latency, up to WEBHOOK_ENDPOINT_CONCURRENCY (WEBHOOK_SLOW_MS 0: that maximum)",
      }),
      waiting: z.number().int(),
      pending: z.number().int(),
      dead: z.number().int(),
    }),
  })
  .meta({ id: "WebhookEndpoint" });
const endpointListSchema = z.object({ endpoints: z.array(endpointSchema) });
const createdEndpointSchema = z.object({
  endpoint: endpointSchema,
  secret: z.string().meta({ description: "The signing secret (whsec_…), shown this once" }),
});
const rotatedSecretSchema = z.object({ secret: z.string(), previousSecretExpiresAt: instant });

const deliverySchema = z
  .object({
    id,
    endpointId: id,
    messageId: z.string(),
    eventType: z.string(),
    status: z.enum(["failed", "cancelled", "pending", "delivered"]),
    jobId: id,
    jobStatus: z.string(),
    requests: z.number().int().meta({ description: "Every request sent for it, replays included" }),
    roundRequests: z.number().int().meta({ description: "Requests sent since it was last started or replayed" }),
    maxRequests: z
      .number()
      .int()
      .meta({ description: "Requests a round sends at most before the delivery fails for good" }),
    subjectJobId: id.nullable().meta({ description: "The job the event is about, if any" }),
    lastStatusCode: z.number().int().nullable(),
    lastError: z.string().nullable(),
    lastAttemptAt: nullableInstant,
    nextAttemptAt: nullableInstant,
    deliveredAt: nullableInstant,
    createdAt: instant,
  })
  .meta({ id: "WebhookDelivery" });
const deliveryPageSchema = z.object({ deliveries: z.array(deliverySchema), ...cursorPage });
const deliveryDetailSchema = deliverySchema.extend({
  body: z.string().meta({
    description: "The message as stored (files by id; each request carried its own download links)",
  }),
  attempts: z.array(
    z.object({
      id,
      jobId: id.nullable(),
      url: z.string(),
      requestHeaders: z.record(z.string(), z.string()),
      startedAt: instant,
      durationMs: z.number(),
      statusCode: z.number().int().nullable(),
      responseHeaders: z.record(z.string(), z.string()).nullable(),
      responseBody: z.string().nullable(),
      error: z.string().nullable(),
      outcome: z.string(),
    }),
  ),
});
const recoveredSchema = z.object({ replayed: z.number().int() });
const testEventSchema = z.object({ messageId: z.string(), deliveryId: id });

const tags = ["Webhooks"];
const endpointPath = () => ({ path: idPath("The endpoint") });

export const webhookOperations = {
  endpoints: operation("get", "/api/v1/webhooks/endpoints", {
    tags,
    summary: "The tenant's endpoints with their health (a platform admin: all, or ?tenant=)",
    requestParams: { query: tenantQuery },
    responses: authed({ "200": jsonOf(endpointListSchema, "The endpoints") }),
  }),
  createEndpoint: operation("post", "/api/v1/webhooks/endpoints", {
    tags,
    summary: "Add an endpoint",
    requestBody: body(createEndpointSchema),
    responses: authed({ "201": created(createdEndpointSchema, "The endpoint and its secret") }, 400, 413),
  }),
  endpoint: operation("get", "/api/v1/webhooks/endpoints/{id}", {
    tags,
    summary: "One endpoint with its health",
    requestParams: endpointPath(),
    responses: authed({ "200": jsonOf(endpointSchema, "The endpoint") }, 404),
  }),
  updateEndpoint: operation("patch", "/api/v1/webhooks/endpoints/{id}", {
    tags,
    summary: "Change it; re-enabling resets its circuit",
    requestParams: endpointPath(),
    requestBody: body(updateEndpointSchema),
    responses: authed({ "200": jsonOf(endpointSchema, "The endpoint") }, 400, 404, 413),
  }),
  deleteEndpoint: operation("delete", "/api/v1/webhooks/endpoints/{id}", {
    tags,
    summary: "Delete it; its waiting deliveries are cancelled",
    requestParams: endpointPath(),
    responses: authed({ "204": noContent }, 404),
  }),
  deliveries: operation("get", "/api/v1/webhooks/endpoints/{id}/deliveries", {
    tags,
    summary: "Its deliveries, newest first",
    requestParams: { path: idPath("The endpoint"), query: deliveryQuerySchema },
    responses: authed({ "200": jsonOf(deliveryPageSchema, "A page of deliveries") }, 400, 404),
  }),
  recover: operation("post", "/api/v1/webhooks/endpoints/{id}/recover", {
    tags,
    summary: "Replay every failed delivery created since a time (each keeps its webhook-id)",
    requestParams: endpointPath(),
    requestBody: body(recoverSchema),
    responses: authed({ "202": jsonOf(recoveredSchema, "How many were replayed") }, 400, 404),
  }),
  rotateSecret: operation("post", "/api/v1/webhooks/endpoints/{id}/rotate-secret", {
    tags,
    summary: "A new secret; the old one keeps signing, as a second signature, for 24 hours",
    requestParams: endpointPath(),
    responses: authed({ "200": jsonOf(rotatedSecretSchema, "The new secret, shown this once") }, 404),
  }),
  test: operation("post", "/api/v1/webhooks/endpoints/{id}/test", {
    tags,
    summary: "Send a `ping` event to this endpoint",
    requestParams: endpointPath(),
    responses: authed({ "202": jsonOf(testEventSchema, "The message and its delivery") }, 404, 409),
  }),
  jobDeliveries: operation("get", "/api/v1/webhooks/deliveries", {
    tags,
    summary: "The deliveries of events about one job (?job=), to every endpoint, newest first",
    requestParams: { query: jobDeliveryQuerySchema },
    responses: authed({ "200": jsonOf(deliveryPageSchema, "The job's deliveries (nextCursor is always null)") }, 400),
  }),
  delivery: operation("get", "/api/v1/webhooks/deliveries/{id}", {
    tags,
    summary: "One delivery: the message sent and every request with its answer",
    requestParams: { path: idPath("The delivery") },
    responses: authed({ "200": jsonOf(deliveryDetailSchema, "The delivery") }, 404),
  }),
  replayDelivery: operation("post", "/api/v1/webhooks/deliveries/{id}/replay", {
    tags,
    summary: "Send the message again (same webhook-id, a fresh retry schedule)",
    requestParams: { path: idPath("The delivery") },
    responses: authed({ "202": jsonOf(deliverySchema, "The delivery, pending again") }, 404, 409),
  }),
};

export const webhooksApi: ApiDescription = {
  tags: [{ name: "Webhooks" }],
  operations: Object.values(webhookOperations),
};

/** One entry per response schema; `tsc` reports the first that is not `true`. */
export const webhookSchemasMatchTheirTypes: {
  endpoint: Same<Out<typeof endpointSchema>, Ret<typeof getEndpoint>>;
  endpoints: Same<Out<typeof endpointListSchema>, { endpoints: Ret<typeof listEndpoints> }>;
  createdEndpoint: Same<Out<typeof createdEndpointSchema>, Ret<typeof createEndpoint>>;
  rotated: Same<Out<typeof rotatedSecretSchema>, Ret<typeof rotateSecret>>;
  delivery: Same<Out<typeof deliverySchema>, Ret<typeof replayDelivery>>;
  deliveries: Same<Out<typeof deliveryPageSchema>, Ret<typeof listDeliveries>>;
  jobDeliveries: Same<Out<typeof deliveryPageSchema>, Ret<typeof listJobDeliveries>>;
  deliveryDetail: Same<Out<typeof deliveryDetailSchema>, Ret<typeof getDelivery>>;
  recovered: Same<Out<typeof recoveredSchema>, Ret<typeof recoverEndpoint>>;
  testEvent: Same<Out<typeof testEventSchema>, Ret<typeof sendTestEvent>>;
} = {
  endpoint: true,
  endpoints: true,
  createdEndpoint: true,
  rotated: true,
  delivery: true,
  deliveries: true,
  jobDeliveries: true,
  deliveryDetail: true,
  recovered: true,
  testEvent: true,
};
