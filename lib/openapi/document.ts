/**
 * The OpenAPI 3.1 description of the REST API, generated from the zod schemas
 * the routes parse with (request bodies, query strings) and the response
 * schemas of ./schemas.ts, by zod-openapi. Served at GET /api/v1/openapi.json
 * and rendered at /docs/api. Every route under app/api is listed here: a test
 * (tests/unit/openapi.test.ts) walks app/api and fails on one that is not.
 */
import { z } from "zod";
import {
  createDocument,
  type ZodOpenApiPathsObject,
  type ZodOpenApiResponseObject,
  type ZodOpenApiResponsesObject,
} from "zod-openapi";
import { listPausesSchema, pauseBodySchema } from "../admission/pauses";
import {
  queueSettingsSchema as queueSettingsBodySchema,
  tenantLimitSchema as tenantLimitBodySchema,
} from "../admission/queues";
import { healthQuerySchema } from "../ops/health";
import {
  acceptInviteSchema,
  changePasswordSchema,
  inviteSchema as inviteBodySchema,
  listInvitesSchema,
  memberChangeSchema,
  membersQuerySchema,
} from "../auth/accounts";
import { createTokenSchema } from "../auth/tokens";
import { exportRequestSchema } from "../exports/schema";
import { createLinkSchema } from "../files/links";
import { importRequestSchema } from "../imports/stages";
import { cancelBodySchema } from "../jobs/actions";
import { deadLetterActionSchema, listDeadLettersSchema } from "../jobs/dead-letters";
import { listJobsQuerySchema } from "../jobs/queries";
import { auditQuerySchema, deadLetterGroupsSchema, stuckSchema } from "../ops/console";
import { jobActionSchema, listOpsJobsSchema } from "../ops/jobs";
import { overviewSchema as overviewQuerySchema } from "../ops/stats";
import { backfillSchema, createScheduleSchema, triggerSchema, updateScheduleSchema } from "../schedules/schema";
import { listSchedulesQuerySchema, runsQuerySchema } from "../schedules/service";
import { createTenantSchema, tenantSettingsSchema } from "../tenants/settings";
import { createEndpointSchema, deliveryQuerySchema, recoverSchema, updateEndpointSchema } from "../webhooks/schema";
import * as s from "./schemas";

type Responses = ZodOpenApiResponsesObject & Record<string, ZodOpenApiResponseObject>;
type Response = ZodOpenApiResponseObject;

const jsonOf = (schema: z.ZodType, description: string): Response => ({
  description,
  content: { "application/json": { schema } },
});
const noContent: Response = { description: "Done; no body" };

const errorOf = (description: string): Response => jsonOf(s.errorBodySchema, description);

const locationHeader = z.object({ Location: z.string().meta({ description: "The URL of what was made" }) });
/** An answer that made something: its URL in `Location`. */
const created = (schema: z.ZodType, description: string): Response => ({
  ...jsonOf(schema, description),
  headers: locationHeader,
});
const errors = {
  400: errorOf("Invalid input: `error.fields` names each failing field"),
  401: errorOf("Not signed in, or the token is unknown, expired or revoked"),
  403: errorOf("Signed in, but the role (or a read-only token) does not allow it"),
  404: errorOf("Not found — also another tenant's: never 403, never its data"),
  409: errorOf("The resource is not in a state that allows it (e.g. the job already finished)"),
  410: errorOf("Gone: expired or revoked"),
  413: errorOf("The body is larger than MAX_BODY_BYTES"),
  429: {
    ...errorOf("Rate limited, or a quota is used up (`details` names it)"),
    headers: z.object({ "Retry-After": z.string().optional().meta({ description: "Seconds to wait" }) }),
  },
} as const;
type ErrorStatus = keyof typeof errors;

/** Success responses, the errors named, and `default`: any other failure has the same envelope. */
function answers(ok: Responses, ...codes: ErrorStatus[]): Responses {
  const out: Responses = { ...ok };
  for (const code of codes) out[String(code)] = errors[code];
  out.default = errorOf("Any other failure (a 500 says no more than `internal`)");
  return out;
}

/** A signed-in caller's answers: 401, 403 and 429 may come from any such route. */
const authed = (ok: Responses, ...codes: ErrorStatus[]) => answers(ok, 401, 403, 429, ...codes);

const uuid = (what: string) => z.string().meta({ description: what, example: "0f8b6a52-8f0e-4b8e-9d7c-5b1d2a3c4e5f" });
const idPath = (what: string) => z.object({ id: uuid(what) });
const tenantQuery = z.object({
  tenant: z.string().optional().meta({ description: "Platform admins: a tenant's slug (or id) to narrow to" }),
});

const body = (schema: z.ZodType, required = true) => ({
  required,
  content: { "application/json": { schema } },
});

// A POST /api/v1/exports body may carry `runAt` beside the export request (lib/exports/service.ts splits it off).
const exportBodySchema = exportRequestSchema.meta({
  id: "ExportRequest",
  override: ({ jsonSchema }) => {
    const properties = (jsonSchema.properties ??= {});
    properties.runAt = {
      type: ["string", "null"],
      description: "Start no earlier than this (ISO 8601, at most a year ahead): the job waits as `scheduled`",
    };
  },
});

const sseResponse = (what: string): Response => ({
  description:
    `${what}. Each event's \`id\` is the job's sequence number and its \`data\` a JSON job event ` +
    "(jobId, seq, type, status, attempts, done, total, unit, stage, message, bytes, children, cancelRequested, " +
    "admission, at); comment lines keep the connection alive.",
  content: { "text/event-stream": { schema: z.string() } },
});

const fileDownload = (what: string): Response => ({
  description: `${what} (Content-Disposition: attachment; never cached)`,
  content: { "application/octet-stream": { schema: z.string().meta({ format: "binary" }) } },
});

const tusHeaders = z.object({
  "Tus-Resumable": z.literal("1.0.0").meta({ description: "The tus protocol version" }),
});
const tus = "Resumable uploads, tus 1.0 (https://tus.io/protocols/resumable-upload): creation, termination";

const paths: ZodOpenApiPathsObject = {
  // ── System ──
  "/api/health": {
    get: {
      tags: ["System"],
      summary: "Liveness and database reachability",
      security: [],
      responses: {
        "200": jsonOf(s.healthSchema, "Up, and the database answers"),
        "503": jsonOf(s.healthSchema, "The database does not answer"),
      },
    },
  },
  "/api/metrics": {
    get: {
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
    },
  },
  "/api/v1/openapi.json": {
    get: {
      tags: ["System"],
      summary: "This document",
      security: [],
      responses: {
        "200": {
          description: "The OpenAPI 3.1 document",
          content: { "application/json": { schema: z.record(z.string(), z.unknown()) } },
        },
      },
    },
  },

  // ── Jobs ──
  "/api/v1/jobs": {
    get: {
      tags: ["Jobs"],
      summary: "The tenant's jobs, newest first",
      description: "Keyset-paginated: pass `nextCursor` back as `cursor`.",
      requestParams: { query: listJobsQuerySchema },
      responses: authed({ "200": jsonOf(s.jobPageSchema, "A page of jobs") }, 400),
    },
  },
  "/api/v1/jobs/{id}": {
    get: {
      tags: ["Jobs"],
      summary: "One job with its progress and result",
      requestParams: { path: idPath("The job") },
      responses: authed({ "200": jsonOf(s.jobSchema, "The job") }, 404),
    },
  },
  "/api/v1/jobs/{id}/cancel": {
    post: {
      tags: ["Jobs"],
      summary: "Cancel a waiting job at once, or signal a running one",
      requestParams: { path: idPath("The job") },
      requestBody: body(cancelBodySchema, false),
      responses: authed({ "200": jsonOf(s.jobSchema, "The job, cancelled or asked to stop") }, 400, 404, 409, 413),
    },
  },
  "/api/v1/jobs/{id}/replay": {
    post: {
      tags: ["Jobs"],
      summary: "Operators: run a failed or cancelled job again, as a new job",
      requestParams: { path: idPath("The job to replay") },
      responses: authed({ "201": created(s.jobSchema, "The new job") }, 404, 409),
    },
  },
  "/api/v1/jobs/{id}/history": {
    get: {
      tags: ["Jobs"],
      summary: "Every attempt and the status timeline",
      requestParams: { path: idPath("The job") },
      responses: authed({ "200": jsonOf(s.jobHistorySchema, "Attempts and transitions, oldest first") }, 404),
    },
  },
  "/api/v1/jobs/{id}/parts": {
    get: {
      tags: ["Jobs"],
      summary: "A job's child jobs (a split export's parts)",
      requestParams: { path: idPath("The parent job") },
      responses: authed({ "200": jsonOf(s.jobPartsSchema, "Its parts, in order") }, 404),
    },
  },
  "/api/v1/jobs/{id}/events": {
    get: {
      tags: ["Jobs"],
      summary: "Live progress of one job (Server-Sent Events)",
      requestParams: { path: idPath("The job") },
      responses: authed({ "200": sseResponse("A snapshot, then progress and status until the job ends") }, 404),
    },
  },
  "/api/v1/events": {
    get: {
      tags: ["Jobs"],
      summary: "Live events of every job of the tenant (Server-Sent Events)",
      requestParams: {
        query: z.object({
          lastEventId: z.string().optional().meta({ description: "Resume after this event (as Last-Event-ID)" }),
        }),
        header: z.object({
          "Last-Event-ID": z.string().optional().meta({ description: "Sent by EventSource on reconnect" }),
        }),
      },
      responses: authed({ "200": sseResponse("Events of the tenant's jobs as they happen") }),
    },
  },

  // ── Dead letters ──
  "/api/v1/dead-letters": {
    get: {
      tags: ["Dead letters"],
      summary: "Operators: the tenant's failed jobs, newest first",
      requestParams: { query: listDeadLettersSchema },
      responses: authed({ "200": jsonOf(s.jobPageSchema, "A page of dead jobs") }, 400),
    },
  },
  "/api/v1/dead-letters/replay": {
    post: {
      tags: ["Dead letters"],
      summary: "Operators: replay dead jobs by ids or by filter",
      requestBody: body(deadLetterActionSchema),
      responses: authed({ "200": jsonOf(s.deadLetterReplaySchema, "How many matched, and the new jobs") }, 400, 413),
    },
  },
  "/api/v1/dead-letters/discard": {
    post: {
      tags: ["Dead letters"],
      summary: "Operators: remove dead jobs from the queue by ids or by filter",
      requestBody: body(deadLetterActionSchema),
      responses: authed({ "200": jsonOf(s.deadLetterDiscardSchema, "How many matched and were discarded") }, 400, 413),
    },
  },

  // ── Exports ──
  "/api/v1/exports": {
    post: {
      tags: ["Exports"],
      summary: "Request an export of the tenant's data",
      description: "Answers at once with the queued job; follow it at `/api/v1/jobs/{id}` or its events.",
      requestParams: {
        header: z.object({
          "Idempotency-Key": z
            .string()
            .optional()
            .meta({ description: "1–200 characters: a repeat with the same key answers the first job" }),
        }),
      },
      requestBody: body(exportBodySchema),
      responses: authed(
        {
          "202": {
            ...jsonOf(s.jobSchema, "The queued export job"),
            headers: locationHeader.extend({
              "Idempotent-Replayed": z
                .literal("true")
                .optional()
                .meta({ description: "Present when an earlier request with the same Idempotency-Key made the job" }),
            }),
          },
        },
        400,
        413,
      ),
    },
  },
  "/api/v1/exports/{id}": {
    delete: {
      tags: ["Exports"],
      summary: "Delete an export's files before they expire (the job shows expired)",
      requestParams: { path: idPath("The export job") },
      responses: authed({ "204": noContent }, 404, 409),
    },
  },
  "/api/v1/exports/{id}/download": {
    get: {
      tags: ["Exports"],
      summary: "Download an export's file",
      requestParams: { path: idPath("The export job") },
      responses: authed({ "200": fileDownload("The file") }, 404, 409, 410),
    },
  },
  "/api/v1/exports/{id}/links": {
    get: {
      tags: ["Exports"],
      summary: "The export's download links with their download counts",
      requestParams: { path: idPath("The export job") },
      responses: authed({ "200": jsonOf(s.linkListSchema, "Its links, newest first") }, 404),
    },
    post: {
      tags: ["Exports"],
      summary: "A new short-lived download link (no sign-in needed to use it)",
      requestParams: { path: idPath("The export job") },
      requestBody: body(createLinkSchema, false),
      responses: authed({ "201": jsonOf(s.linkSchema, "The link, with its `url` (shown this once)") }, 400, 404, 409),
    },
  },
  "/api/v1/exports/{id}/links/{linkId}": {
    delete: {
      tags: ["Exports"],
      summary: "Revoke a download link at once",
      requestParams: { path: z.object({ id: uuid("The export job"), linkId: uuid("The link") }) },
      responses: authed({ "204": noContent }, 404),
    },
  },

  // ── Imports and uploads ──
  "/api/v1/imports": {
    get: {
      tags: ["Imports"],
      summary: "The tenant's imports, newest first",
      requestParams: {
        query: z.object({ limit: z.number().int().min(1).max(100).optional().meta({ description: "Default 50" }) }),
      },
      responses: authed({ "200": jsonOf(s.importListSchema, "Its imports") }),
    },
    post: {
      tags: ["Imports"],
      summary: "Import a finished upload into the tenant's data",
      requestParams: {
        header: z.object({
          "Idempotency-Key": z
            .string()
            .optional()
            .meta({ description: "A repeat with the same key answers the first" }),
        }),
      },
      requestBody: body(importRequestSchema),
      responses: authed(
        { "202": created(s.jobSchema, "The queued import job (Location: the import's URL)") },
        400,
        413,
      ),
    },
  },
  "/api/v1/imports/{id}": {
    get: {
      tags: ["Imports"],
      summary: "An import: its job, stages, counts, first bad rows and errors file",
      requestParams: { path: idPath("The import job") },
      responses: authed({ "200": jsonOf(s.importSchema, "The import") }, 404),
    },
  },
  "/api/v1/imports/{id}/errors": {
    get: {
      tags: ["Imports"],
      summary: "The import's errors file (CSV: line, column, reason, value)",
      requestParams: { path: idPath("The import job") },
      responses: authed({ "200": fileDownload("The errors file") }, 404, 410),
    },
  },
  "/api/v1/imports/{id}/errors/links": {
    post: {
      tags: ["Imports"],
      summary: "A short-lived download link to the errors file",
      requestParams: { path: idPath("The import job") },
      requestBody: body(createLinkSchema),
      responses: authed({ "201": jsonOf(s.linkSchema, "The link, with its `url`") }, 400, 404, 409),
    },
  },
  "/api/v1/uploads": {
    get: {
      tags: ["Uploads"],
      summary: "The tenant's uploads",
      responses: authed({ "200": jsonOf(s.uploadListSchema, "Its uploads, newest first") }),
    },
    post: {
      tags: ["Uploads"],
      summary: "Create a resumable upload (tus creation)",
      description: `${tus}. Send \`Upload-Length\` and \`Upload-Metadata\` (filename, filetype).`,
      requestParams: {
        header: tusHeaders.extend({
          "Upload-Length": z.string().meta({ description: "The file's size in bytes" }),
          "Upload-Metadata": z.string().optional().meta({ description: "tus metadata: `filename <base64>,…`" }),
        }),
      },
      responses: authed(
        { "201": { description: "Created; `Location` is the upload's URL", headers: locationHeader } },
        400,
        413,
      ),
    },
    options: {
      tags: ["Uploads"],
      summary: "tus discovery: version, extensions, maximum size",
      security: [],
      responses: { "204": { description: "Tus-Version, Tus-Extension and Tus-Max-Size headers" } },
    },
  },
  "/api/v1/uploads/{id}": {
    get: {
      tags: ["Uploads"],
      summary: "One upload",
      requestParams: { path: z.object({ id: z.string().meta({ description: "The upload" }) }) },
      responses: authed({ "200": jsonOf(s.uploadSchema, "The upload") }, 404),
    },
    head: {
      tags: ["Uploads"],
      summary: "How much of the upload has arrived (tus: Upload-Offset)",
      requestParams: { path: z.object({ id: z.string() }), header: tusHeaders },
      responses: authed({ "200": { description: "`Upload-Offset` and `Upload-Length` headers, no body" } }, 404),
    },
    patch: {
      tags: ["Uploads"],
      summary: "Send the next bytes (tus)",
      requestParams: {
        path: z.object({ id: z.string() }),
        header: tusHeaders.extend({ "Upload-Offset": z.string().meta({ description: "Where these bytes start" }) }),
      },
      requestBody: {
        required: true,
        content: { "application/offset+octet-stream": { schema: z.string().meta({ format: "binary" }) } },
      },
      responses: authed({ "204": { description: "Stored; `Upload-Offset` is the new offset" } }, 404, 409, 413),
    },
    delete: {
      tags: ["Uploads"],
      summary: "Abandon an upload (tus termination)",
      requestParams: { path: z.object({ id: z.string() }), header: tusHeaders },
      responses: authed({ "204": noContent }, 404),
    },
    options: {
      tags: ["Uploads"],
      summary: "tus discovery",
      security: [],
      requestParams: { path: z.object({ id: z.string() }) },
      responses: { "204": { description: "Tus-Version, Tus-Extension and Tus-Max-Size headers" } },
    },
  },

  // ── Schedules ──
  "/api/v1/schedules": {
    get: {
      tags: ["Schedules"],
      summary: "The tenant's schedules (a platform admin: all, or ?tenant=)",
      requestParams: { query: listSchedulesQuerySchema },
      responses: authed({ "200": jsonOf(s.scheduleListSchema, "The schedules") }, 400),
    },
    post: {
      tags: ["Schedules"],
      summary: "Create a schedule",
      requestBody: body(createScheduleSchema),
      responses: authed({ "201": created(s.scheduleSchema, "The schedule and its next runs") }, 400, 413),
    },
  },
  "/api/v1/schedules/{id}": {
    get: {
      tags: ["Schedules"],
      summary: "One schedule",
      requestParams: { path: idPath("The schedule") },
      responses: authed({ "200": jsonOf(s.scheduleSchema, "The schedule") }, 404),
    },
    patch: {
      tags: ["Schedules"],
      summary: "Change fields (the next runs are recomputed)",
      requestParams: { path: idPath("The schedule") },
      requestBody: body(updateScheduleSchema),
      responses: authed({ "200": jsonOf(s.scheduleSchema, "The schedule") }, 400, 404, 413),
    },
    delete: {
      tags: ["Schedules"],
      summary: "Delete it: waiting runs are cancelled, finished and running ones kept",
      requestParams: { path: idPath("The schedule") },
      responses: authed({ "200": jsonOf(s.scheduleDeletedSchema, "Deleted, and how many runs were cancelled") }, 404),
    },
  },
  "/api/v1/schedules/{id}/pause": {
    post: {
      tags: ["Schedules"],
      summary: "No runs until resumed (what falls due meanwhile is not run later)",
      requestParams: { path: idPath("The schedule") },
      responses: authed({ "200": jsonOf(s.scheduleSchema, "The schedule") }, 404),
    },
  },
  "/api/v1/schedules/{id}/resume": {
    post: {
      tags: ["Schedules"],
      summary: "Run again from its next occurrence after now",
      requestParams: { path: idPath("The schedule") },
      responses: authed({ "200": jsonOf(s.scheduleSchema, "The schedule") }, 404),
    },
  },
  "/api/v1/schedules/{id}/trigger": {
    post: {
      tags: ["Schedules"],
      summary: "One run now (429 quota_exceeded when the owner's or tenant's quotas refuse it)",
      requestParams: { path: idPath("The schedule") },
      requestBody: body(triggerSchema, false),
      responses: authed({ "202": jsonOf(s.triggeredRunsSchema, "The runs made") }, 400, 404),
    },
  },
  "/api/v1/schedules/{id}/backfill": {
    post: {
      tags: ["Schedules"],
      summary: "A run per occurrence in [from, to] (each within the owner's and tenant's quotas)",
      requestParams: { path: idPath("The schedule") },
      requestBody: body(backfillSchema),
      responses: authed({ "202": jsonOf(s.backfilledRunsSchema, "The runs made") }, 400, 404),
    },
  },
  "/api/v1/schedules/{id}/runs": {
    get: {
      tags: ["Schedules"],
      summary: "Its runs (jobs with scheduledFor), newest first",
      requestParams: { path: idPath("The schedule"), query: runsQuerySchema },
      responses: authed({ "200": jsonOf(s.scheduleRunPageSchema, "A page of runs") }, 400, 404),
    },
  },
  "/api/v1/schedules/{id}/events": {
    get: {
      tags: ["Schedules"],
      summary: "Occurrences that made no run (missed, skipped, buffered) and runs cancelled by a newer one",
      requestParams: { path: idPath("The schedule") },
      responses: authed({ "200": jsonOf(s.scheduleEventListSchema, "Its events, newest first") }, 404),
    },
  },

  // ── Webhooks ──
  "/api/v1/webhooks/endpoints": {
    get: {
      tags: ["Webhooks"],
      summary: "The tenant's endpoints with their health (a platform admin: all, or ?tenant=)",
      requestParams: { query: tenantQuery },
      responses: authed({ "200": jsonOf(s.endpointListSchema, "The endpoints") }),
    },
    post: {
      tags: ["Webhooks"],
      summary: "Add an endpoint",
      requestBody: body(createEndpointSchema),
      responses: authed({ "201": created(s.createdEndpointSchema, "The endpoint and its secret") }, 400, 413),
    },
  },
  "/api/v1/webhooks/endpoints/{id}": {
    get: {
      tags: ["Webhooks"],
      summary: "One endpoint with its health",
      requestParams: { path: idPath("The endpoint") },
      responses: authed({ "200": jsonOf(s.endpointSchema, "The endpoint") }, 404),
    },
    patch: {
      tags: ["Webhooks"],
      summary: "Change it; re-enabling resets its circuit",
      requestParams: { path: idPath("The endpoint") },
      requestBody: body(updateEndpointSchema),
      responses: authed({ "200": jsonOf(s.endpointSchema, "The endpoint") }, 400, 404, 413),
    },
    delete: {
      tags: ["Webhooks"],
      summary: "Delete it; its waiting deliveries are cancelled",
      requestParams: { path: idPath("The endpoint") },
      responses: authed({ "204": noContent }, 404),
    },
  },
  "/api/v1/webhooks/endpoints/{id}/deliveries": {
    get: {
      tags: ["Webhooks"],
      summary: "Its deliveries, newest first",
      requestParams: { path: idPath("The endpoint"), query: deliveryQuerySchema },
      responses: authed({ "200": jsonOf(s.deliveryPageSchema, "A page of deliveries") }, 400, 404),
    },
  },
  "/api/v1/webhooks/endpoints/{id}/recover": {
    post: {
      tags: ["Webhooks"],
      summary: "Replay every failed delivery created since a time (each keeps its webhook-id)",
      requestParams: { path: idPath("The endpoint") },
      requestBody: body(recoverSchema),
      responses: authed({ "202": jsonOf(s.recoveredSchema, "How many were replayed") }, 400, 404),
    },
  },
  "/api/v1/webhooks/endpoints/{id}/rotate-secret": {
    post: {
      tags: ["Webhooks"],
      summary: "A new secret; the old one keeps signing, as a second signature, for 24 hours",
      requestParams: { path: idPath("The endpoint") },
      responses: authed({ "200": jsonOf(s.rotatedSecretSchema, "The new secret, shown this once") }, 404),
    },
  },
  "/api/v1/webhooks/endpoints/{id}/test": {
    post: {
      tags: ["Webhooks"],
      summary: "Send a `ping` event to this endpoint",
      requestParams: { path: idPath("The endpoint") },
      responses: authed({ "202": jsonOf(s.testEventSchema, "The message and its delivery") }, 404, 409),
    },
  },
  "/api/v1/webhooks/deliveries/{id}": {
    get: {
      tags: ["Webhooks"],
      summary: "One delivery: the message sent and every request with its answer",
      requestParams: { path: idPath("The delivery") },
      responses: authed({ "200": jsonOf(s.deliveryDetailSchema, "The delivery") }, 404),
    },
  },
  "/api/v1/webhooks/deliveries/{id}/replay": {
    post: {
      tags: ["Webhooks"],
      summary: "Send the message again (same webhook-id, a fresh retry schedule)",
      requestParams: { path: idPath("The delivery") },
      responses: authed({ "202": jsonOf(s.deliverySchema, "The delivery, pending again") }, 404, 409),
    },
  },

  // ── Account, tokens, people ──
  "/api/v1/account/password": {
    post: {
      tags: ["Account"],
      summary: "Change one's own password (browser session); every session signs in again",
      security: [{ sessionCookie: [] }],
      requestBody: body(changePasswordSchema),
      responses: authed({ "204": noContent }, 400, 413),
    },
  },
  "/api/v1/tokens": {
    get: {
      tags: ["API tokens"],
      summary: "The caller's API tokens",
      responses: authed({ "200": jsonOf(s.tokenListSchema, "The tokens (never their secrets)") }),
    },
    post: {
      tags: ["API tokens"],
      summary: "Create a token (the secret is shown once)",
      requestBody: body(createTokenSchema),
      responses: authed({ "201": jsonOf(s.createdTokenSchema, "The secret and the token's record") }, 400, 413),
    },
  },
  "/api/v1/tokens/{id}": {
    delete: {
      tags: ["API tokens"],
      summary: "Revoke one of the caller's tokens",
      requestParams: { path: idPath("The token") },
      responses: authed({ "204": noContent }, 404),
    },
  },
  "/api/v1/members": {
    get: {
      tags: ["People"],
      summary: "The people of a tenant and their roles (operators: their own)",
      requestParams: { query: membersQuerySchema },
      responses: authed({ "200": jsonOf(s.memberListSchema, "The members") }, 400),
    },
  },
  "/api/v1/members/{userId}": {
    patch: {
      tags: ["People"],
      summary: "Change a member's role",
      requestParams: { path: z.object({ userId: uuid("The user") }) },
      requestBody: body(memberChangeSchema),
      responses: authed({ "200": jsonOf(s.memberSchema, "The member") }, 400, 404, 409),
    },
    delete: {
      tags: ["People"],
      summary: "Remove a member from the tenant",
      requestParams: { path: z.object({ userId: uuid("The user") }), query: tenantQuery },
      responses: authed({ "204": noContent }, 404, 409),
    },
  },
  "/api/v1/invites": {
    get: {
      tags: ["People"],
      summary: "Invitations (operators: their tenant's)",
      requestParams: { query: listInvitesSchema },
      responses: authed({ "200": jsonOf(s.inviteListSchema, "The invitations") }, 400),
    },
    post: {
      tags: ["People"],
      summary: "Invite someone by e-mail",
      requestBody: body(inviteBodySchema),
      responses: authed({ "201": jsonOf(s.inviteSchema, "The invitation, with its link (shown this once)") }, 400, 409),
    },
  },
  "/api/v1/invites/{id}": {
    delete: {
      tags: ["People"],
      summary: "Revoke a pending invitation (its link stops working)",
      requestParams: { path: idPath("The invitation") },
      responses: authed({ "204": noContent }, 404, 409),
    },
  },
  "/api/v1/invites/accept": {
    post: {
      tags: ["People"],
      summary:
        "Use an invitation: signed in as its invitee ({ token }), or without a session ({ token, name, password }: a new account; an e-mail that already has one gets the same answer and must sign in first)",
      security: [],
      requestBody: body(acceptInviteSchema),
      responses: answers(
        { "200": jsonOf(s.acceptedInviteSchema, "The account's e-mail, to sign in with") },
        400,
        404,
        410,
        429,
      ),
    },
  },

  // ── Operations console (operators: their tenant; platform admins: every tenant) ──
  "/api/v1/ops/overview": {
    get: {
      tags: ["Operations"],
      summary: "Counts per queue and type, throughput, failure rate, runtime, charts",
      requestParams: { query: overviewQuerySchema },
      responses: authed({ "200": jsonOf(s.overviewSchema, "The overview") }, 400),
    },
  },
  "/api/v1/ops/jobs": {
    get: {
      tags: ["Operations"],
      summary: "The jobs explorer",
      requestParams: { query: listOpsJobsSchema },
      responses: authed({ "200": jsonOf(s.opsJobPageSchema, "A page of jobs") }, 400),
    },
  },
  "/api/v1/ops/jobs/{id}": {
    get: {
      tags: ["Operations"],
      summary: "One job with attempts, timeline, parts and audit entries (input redacted)",
      requestParams: { path: idPath("The job") },
      responses: authed({ "200": jsonOf(s.opsJobSchema, "The job") }, 404),
    },
  },
  "/api/v1/ops/jobs/actions": {
    post: {
      tags: ["Operations"],
      summary: "cancel, replay, discard or retry_now on ids and/or a filter",
      description: "With `dryRun: true`, how many match and the ids the action applies to, changing nothing.",
      requestBody: body(jobActionSchema),
      responses: authed(
        {
          "200": jsonOf(
            z.union([s.jobActionResultSchema, s.jobActionPlanSchema]),
            "How many matched and were affected (a dry run: the plan)",
          ),
        },
        400,
        413,
      ),
    },
  },
  "/api/v1/ops/stuck": {
    get: {
      tags: ["Operations"],
      summary: "Jobs that need a look, with a suggested action",
      requestParams: { query: stuckSchema },
      responses: authed({ "200": jsonOf(s.stuckJobListSchema, "The jobs") }, 400),
    },
  },
  "/api/v1/ops/dead-letters": {
    get: {
      tags: ["Operations"],
      summary: "The dead-letter queue grouped by type, error class and fingerprint",
      requestParams: { query: deadLetterGroupsSchema },
      responses: authed({ "200": jsonOf(s.deadLetterGroupListSchema, "The groups") }, 400),
    },
  },
  "/api/v1/ops/audit": {
    get: {
      tags: ["Operations"],
      summary: "The audit log, newest first",
      requestParams: { query: auditQuerySchema },
      responses: authed({ "200": jsonOf(s.auditPageSchema, "A page of entries") }, 400),
    },
  },
  "/api/v1/ops/pauses": {
    get: {
      tags: ["Operations"],
      summary: "Active pauses (?state=all adds resumed ones)",
      requestParams: { query: listPausesSchema },
      responses: authed({ "200": jsonOf(s.pauseListSchema, "The pauses") }, 400),
    },
    post: {
      tags: ["Operations"],
      summary: "Pause a scope (queue, type, tenant)",
      requestBody: body(pauseBodySchema),
      responses: authed({ "201": created(s.createdPauseSchema, "The pause") }, 400, 409, 413),
    },
  },
  "/api/v1/ops/pauses/{id}": {
    delete: {
      tags: ["Operations"],
      summary: "Resume: the scope's waiting jobs start in their order",
      requestParams: { path: idPath("The pause") },
      responses: authed({ "200": jsonOf(s.pauseSchema, "The pause, resumed") }, 404, 409),
    },
  },
  "/api/v1/ops/queues": {
    get: {
      tags: ["Operations"],
      summary: "Per queue: waiting, admitted, running, pauses, caps, per-tenant counts",
      responses: authed({ "200": jsonOf(s.queuesSchema, "The queues") }),
    },
  },
  "/api/v1/ops/queues/{queue}": {
    patch: {
      tags: ["Platform"],
      summary: "Platform admins: a queue's default per-tenant cap and its window, for the whole fleet",
      requestParams: { path: z.object({ queue: z.enum(["interactive", "bulk", "webhooks"]) }) },
      requestBody: body(queueSettingsBodySchema),
      responses: authed({ "200": jsonOf(s.queueSettingsSchema, "The queue's settings") }, 400, 404),
    },
  },
  "/api/v1/ops/health": {
    get: {
      tags: ["Operations"],
      summary: "Health signals per queue (platform admins) and per queue and tenant, with thresholds and states",
      requestParams: { query: healthQuerySchema },
      responses: authed({ "200": jsonOf(s.opsHealthSchema, "The health signals") }, 400, 404),
    },
  },
  "/api/v1/ops/queues/{queue}/tenants/{tenant}": {
    put: {
      tags: ["Platform"],
      summary: "Platform admins: a tenant's cap and weight in a queue",
      requestParams: {
        path: z.object({
          queue: z.enum(["interactive", "bulk", "webhooks"]),
          tenant: z.string().meta({ description: "A tenant's slug or id" }),
        }),
      },
      requestBody: body(tenantLimitBodySchema),
      responses: authed({ "200": jsonOf(s.tenantLimitSchema, "The tenant's limit") }, 400, 404),
    },
    delete: {
      tags: ["Platform"],
      summary: "Platform admins: the tenant back to the queue's defaults",
      requestParams: {
        path: z.object({
          queue: z.enum(["interactive", "bulk", "webhooks"]),
          tenant: z.string().meta({ description: "A tenant's slug or id" }),
        }),
      },
      responses: authed({ "200": jsonOf(s.tenantLimitSchema, "The tenant's limit, the defaults") }, 400, 404),
    },
  },
  "/api/v1/ops/tenants": {
    get: {
      tags: ["Platform"],
      summary: "Platform admins: every tenant with its retention and quotas",
      responses: authed({ "200": jsonOf(s.tenantListSchema, "The tenants") }),
    },
    post: {
      tags: ["Platform"],
      summary: "Platform admins: create a tenant",
      requestBody: body(createTenantSchema),
      responses: authed({ "201": jsonOf(s.tenantSchema, "The tenant") }, 400, 409, 413),
    },
  },
  "/api/v1/ops/tenants/{tenant}": {
    patch: {
      tags: ["Platform"],
      summary: "Platform admins: a tenant's retention and quotas",
      requestParams: { path: z.object({ tenant: z.string().meta({ description: "A tenant's slug or id" }) }) },
      requestBody: body(tenantSettingsSchema),
      responses: authed({ "200": jsonOf(s.tenantSchema, "The tenant") }, 400, 404, 413),
    },
  },
  "/api/v1/ops/workers": {
    get: {
      tags: ["Platform"],
      summary: "Platform admins: the worker fleet, and a summary per pool",
      responses: authed({ "200": jsonOf(s.workersSchema, "Workers and pools") }),
    },
  },
};

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
  cached ??= createDocument({
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
    tags: [
      { name: "Jobs" },
      { name: "Exports" },
      { name: "Imports" },
      { name: "Uploads" },
      { name: "Schedules" },
      { name: "Webhooks" },
      { name: "Dead letters" },
      { name: "Operations", description: "Operators: their tenant; platform admins: every tenant" },
      { name: "Platform", description: "Platform admins" },
      { name: "People" },
      { name: "API tokens" },
      { name: "Account" },
      { name: "System" },
    ],
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
    paths,
  });
  return cached;
}
