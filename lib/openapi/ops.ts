/**
 * The operations console (operators: their tenant; platform admins: every tenant) and the
 * platform routes (platform admins), described (lib/api-doc.ts); their answers' schemas are in
 * ./ops-schemas.ts.
 */
import { z } from "zod";
import { authed, body, created, idPath, jsonOf, operation, type ApiDescription } from "../api-doc";
import { listPausesSchema, pauseBodySchema } from "../admission/pauses";
import {
  queueSettingsSchema as queueSettingsBodySchema,
  tenantLimitSchema as tenantLimitBodySchema,
} from "../admission/queues";
import { jobActionSchema, listOpsJobsSchema } from "../ops/jobs";
import { auditQuerySchema, deadLetterGroupsSchema, stuckSchema } from "../ops/console";
import { healthQuerySchema } from "../ops/health";
import { overviewSchema as overviewQuerySchema } from "../ops/stats";
import { createTenantSchema, tenantSettingsSchema } from "../tenants/settings";
import { tenantPrioritySchema } from "../jobs/priority";
import * as s from "./ops-schemas";

const queuePath = () => z.enum(["interactive", "bulk", "webhooks"]);
const tenantParam = () => z.string().meta({ description: "A tenant's slug or id" });

export const opsOperations = {
  overview: operation("get", "/api/v1/ops/overview", {
    tags: ["Operations"],
    summary: "Counts per queue and type, throughput, failure rate, runtime, charts",
    requestParams: { query: overviewQuerySchema },
    responses: authed({ "200": jsonOf(s.overviewSchema, "The overview") }, 400),
  }),
  jobs: operation("get", "/api/v1/ops/jobs", {
    tags: ["Operations"],
    summary: "The jobs explorer",
    requestParams: { query: listOpsJobsSchema },
    responses: authed({ "200": jsonOf(s.opsJobPageSchema, "A page of jobs") }, 400),
  }),
  job: operation("get", "/api/v1/ops/jobs/{id}", {
    tags: ["Operations"],
    summary: "One job with attempts, timeline, parts and audit entries (input redacted)",
    requestParams: { path: idPath("The job") },
    responses: authed({ "200": jsonOf(s.opsJobSchema, "The job") }, 404),
  }),
  jobActions: operation("post", "/api/v1/ops/jobs/actions", {
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
  }),
  stuck: operation("get", "/api/v1/ops/stuck", {
    tags: ["Operations"],
    summary: "Jobs that need a look, with a suggested action",
    requestParams: { query: stuckSchema },
    responses: authed({ "200": jsonOf(s.stuckJobListSchema, "The jobs") }, 400),
  }),
  deadLetters: operation("get", "/api/v1/ops/dead-letters", {
    tags: ["Operations"],
    summary: "The dead-letter queue grouped by type, error class and fingerprint",
    requestParams: { query: deadLetterGroupsSchema },
    responses: authed({ "200": jsonOf(s.deadLetterGroupListSchema, "The groups") }, 400),
  }),
  audit: operation("get", "/api/v1/ops/audit", {
    tags: ["Operations"],
    summary: "The audit log, newest first",
    requestParams: { query: auditQuerySchema },
    responses: authed({ "200": jsonOf(s.auditPageSchema, "A page of entries") }, 400),
  }),
  pauses: operation("get", "/api/v1/ops/pauses", {
    tags: ["Operations"],
    summary: "Active pauses (?state=all adds resumed ones)",
    requestParams: { query: listPausesSchema },
    responses: authed({ "200": jsonOf(s.pauseListSchema, "The pauses") }, 400),
  }),
  pause: operation("post", "/api/v1/ops/pauses", {
    tags: ["Operations"],
    summary: "Pause a scope (queue, type, tenant)",
    requestBody: body(pauseBodySchema),
    responses: authed({ "201": created(s.createdPauseSchema, "The pause") }, 400, 409, 413),
  }),
  resume: operation("delete", "/api/v1/ops/pauses/{id}", {
    tags: ["Operations"],
    summary: "Resume: the scope's waiting jobs start in their order",
    requestParams: { path: idPath("The pause") },
    responses: authed({ "200": jsonOf(s.pauseSchema, "The pause, resumed") }, 404, 409),
  }),
  queues: operation("get", "/api/v1/ops/queues", {
    tags: ["Operations"],
    summary: "Per queue: waiting, admitted, running, pauses, caps, per-tenant counts",
    responses: authed({ "200": jsonOf(s.queuesSchema, "The queues") }),
  }),
  health: operation("get", "/api/v1/ops/health", {
    tags: ["Operations"],
    summary: "Health signals per queue (platform admins) and per queue and tenant, with thresholds and states",
    requestParams: { query: healthQuerySchema },
    responses: authed({ "200": jsonOf(s.opsHealthSchema, "The health signals") }, 400, 404),
  }),

  // ── Platform admins ──
  queueSettings: operation("patch", "/api/v1/ops/queues/{queue}", {
    tags: ["Platform"],
    summary: "Platform admins: a queue's default per-tenant cap and its window, for the whole fleet",
    requestParams: { path: z.object({ queue: queuePath() }) },
    requestBody: body(queueSettingsBodySchema),
    responses: authed({ "200": jsonOf(s.queueSettingsSchema, "The queue's settings") }, 400, 404),
  }),
  setTenantLimit: operation("put", "/api/v1/ops/queues/{queue}/tenants/{tenant}", {
    tags: ["Platform"],
    summary: "Platform admins: a tenant's cap and weight in a queue",
    requestParams: { path: z.object({ queue: queuePath(), tenant: tenantParam() }) },
    requestBody: body(tenantLimitBodySchema),
    responses: authed({ "200": jsonOf(s.tenantLimitSchema, "The tenant's limit") }, 400, 404),
  }),
  clearTenantLimit: operation("delete", "/api/v1/ops/queues/{queue}/tenants/{tenant}", {
    tags: ["Platform"],
    summary: "Platform admins: the tenant back to the queue's defaults",
    requestParams: { path: z.object({ queue: queuePath(), tenant: tenantParam() }) },
    responses: authed({ "200": jsonOf(s.tenantLimitSchema, "The tenant's limit, the defaults") }, 400, 404),
  }),
  tenants: operation("get", "/api/v1/ops/tenants", {
    tags: ["Platform"],
    summary: "Platform admins: every tenant with its retention and quotas",
    responses: authed({ "200": jsonOf(s.tenantListSchema, "The tenants") }),
  }),
  createTenant: operation("post", "/api/v1/ops/tenants", {
    tags: ["Platform"],
    summary: "Platform admins: create a tenant",
    requestBody: body(createTenantSchema),
    responses: authed({ "201": jsonOf(s.tenantSchema, "The tenant") }, 400, 409, 413),
  }),
  tenantSettings: operation("patch", "/api/v1/ops/tenants/{tenant}", {
    tags: ["Platform"],
    summary: "Platform admins: a tenant's retention and quotas",
    requestParams: { path: z.object({ tenant: tenantParam() }) },
    requestBody: body(tenantSettingsSchema),
    responses: authed({ "200": jsonOf(s.tenantSchema, "The tenant") }, 400, 404, 413),
  }),
  tenantPriority: operation("get", "/api/v1/ops/tenants/{tenant}/priority", {
    tags: ["Operations"],
    summary: "The highest priority the tenant's callers may ask for (its members too: their own tenant)",
    requestParams: { path: z.object({ tenant: tenantParam() }) },
    responses: authed({ "200": jsonOf(s.tenantPriorityViewSchema, "The tenant's maximum priority") }, 404),
  }),
  setTenantPriority: operation("put", "/api/v1/ops/tenants/{tenant}/priority", {
    tags: ["Operations"],
    summary:
      "Operators (their tenant) and platform admins: the highest priority the tenant's callers may ask for; audited",
    requestParams: { path: z.object({ tenant: tenantParam() }) },
    requestBody: body(tenantPrioritySchema),
    responses: authed({ "200": jsonOf(s.tenantPriorityViewSchema, "The tenant's maximum priority") }, 400, 404, 413),
  }),
  workers: operation("get", "/api/v1/ops/workers", {
    tags: ["Platform"],
    summary: "Platform admins: the worker fleet, and a summary per pool",
    responses: authed({ "200": jsonOf(s.workersSchema, "Workers and pools") }),
  }),
};

export const opsApi: ApiDescription = {
  tags: [
    { name: "Operations", description: "Operators: their tenant; platform admins: every tenant" },
    { name: "Platform", description: "Platform admins" },
  ],
  operations: Object.values(opsOperations),
};
