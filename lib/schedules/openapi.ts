/**
 * The schedules workload's API, described (lib/api-doc.ts): schedules, their runs and events,
 * pause, resume, trigger and backfill. lib/openapi/document.ts assembles (once schedules is a
 * workload, its manifest hands this over in `openapi`).
 */
import { z } from "zod";
import { priorityField } from "../jobs/priority";
import {
  authed,
  body,
  created,
  cursorPage,
  id,
  idPath,
  instant,
  jsonOf,
  nullableInstant,
  operation,
  type ApiDescription,
  type Out,
  type Ret,
  type Same,
} from "../api-doc";
import { jobSchema } from "../jobs/openapi";
import { backfillSchema, createScheduleSchema, triggerSchema, updateScheduleSchema } from "./schema";
import {
  listSchedulesQuerySchema,
  runsQuerySchema,
  type backfillSchedule,
  type deleteSchedule,
  type getSchedule,
  type listScheduleEvents,
  type listScheduleRuns,
  type listSchedules,
  type triggerSchedule,
} from "./service";

const scheduleSchema = z
  .object({
    id,
    tenantId: id,
    tenant: z.string().nullable(),
    name: z.string(),
    cron: z.string(),
    timezone: z.string(),
    task: z.string(),
    input: z.unknown(),
    missedRunPolicy: z.enum(["skip", "once", "all"]),
    overlapPolicy: z.enum(["skip", "buffer_one", "allow", "cancel_other"]),
    catchupWindowSeconds: z.number().int(),
    maxCatchup: z.number().int(),
    startAt: nullableInstant,
    endAt: nullableInstant,
    paused: z.boolean(),
    pausedAt: nullableInstant,
    nextRunAt: nullableInstant,
    nextRuns: z.array(instant),
    lastRun: z.object({ id, status: z.string(), scheduledFor: instant }).nullable(),
    bufferedFor: nullableInstant,
    missedCount: z.number().int(),
    overlapSkippedCount: z.number().int(),
    quotaSkippedCount: z.number().int().meta({ description: "Runs the quotas refused (each a quota_skipped event)" }),
    priority: priorityField.meta({ description: "Its runs' priority" }),
    createdBy: z.string().nullable(),
    createdAt: instant,
    updatedAt: instant,
  })
  .meta({ id: "Schedule" });
const scheduleListSchema = z.object({ schedules: z.array(scheduleSchema) });
const scheduleDeletedSchema = z.object({ deleted: z.literal(true), cancelledRuns: z.number().int() });
const scheduleRunPageSchema = z.object({ runs: z.array(jobSchema), ...cursorPage });
const scheduleEventListSchema = z.object({
  events: z.array(
    z.object({
      id,
      kind: z.enum(["missed", "overlap_skipped", "buffered", "cancelled_other", "quota_skipped"]),
      scheduledFor: instant,
      jobId: id.nullable(),
      quota: z
        .enum(["jobs_per_user", "jobs_per_tenant", "export_bytes"])
        .nullable()
        .meta({ description: "A quota_skipped event's quota: the one that refused the run" }),
      at: instant,
    }),
  ),
});
const triggeredRunsSchema = z.object({
  runs: z.array(id).meta({ description: "The ids of the runs made" }),
  skipped: z.number().int(),
  cancelled: z.number().int(),
  quotaSkipped: z.number().int().meta({
    description: "Occurrences whose run the quotas of the schedule's owner or tenant refused (quota_skipped events)",
  }),
});
const backfilledRunsSchema = triggeredRunsSchema.extend({ occurrences: z.number().int() });

const tags = ["Schedules"];
const schedulePath = () => ({ path: idPath("The schedule") });

export const scheduleOperations = {
  list: operation("get", "/api/v1/schedules", {
    tags,
    summary: "The tenant's schedules (a platform admin: all, or ?tenant=)",
    requestParams: { query: listSchedulesQuerySchema },
    responses: authed({ "200": jsonOf(scheduleListSchema, "The schedules") }, 400),
  }),
  create: operation("post", "/api/v1/schedules", {
    tags,
    summary: "Create a schedule",
    requestBody: body(createScheduleSchema),
    responses: authed({ "201": created(scheduleSchema, "The schedule and its next runs") }, 400, 413),
  }),
  get: operation("get", "/api/v1/schedules/{id}", {
    tags,
    summary: "One schedule",
    requestParams: schedulePath(),
    responses: authed({ "200": jsonOf(scheduleSchema, "The schedule") }, 404),
  }),
  update: operation("patch", "/api/v1/schedules/{id}", {
    tags,
    summary: "Change fields (the next runs are recomputed)",
    requestParams: schedulePath(),
    requestBody: body(updateScheduleSchema),
    responses: authed({ "200": jsonOf(scheduleSchema, "The schedule") }, 400, 404, 413),
  }),
  delete: operation("delete", "/api/v1/schedules/{id}", {
    tags,
    summary: "Delete it: waiting runs are cancelled, finished and running ones kept",
    requestParams: schedulePath(),
    responses: authed({ "200": jsonOf(scheduleDeletedSchema, "Deleted, and how many runs were cancelled") }, 404),
  }),
  pause: operation("post", "/api/v1/schedules/{id}/pause", {
    tags,
    summary: "No runs until resumed (what falls due meanwhile is not run later)",
    requestParams: schedulePath(),
    responses: authed({ "200": jsonOf(scheduleSchema, "The schedule") }, 404),
  }),
  resume: operation("post", "/api/v1/schedules/{id}/resume", {
    tags,
    summary: "Run again from its next occurrence after now",
    requestParams: schedulePath(),
    responses: authed({ "200": jsonOf(scheduleSchema, "The schedule") }, 404),
  }),
  trigger: operation("post", "/api/v1/schedules/{id}/trigger", {
    tags,
    summary: "One run now (429 quota_exceeded when the owner's or tenant's quotas refuse it)",
    requestParams: schedulePath(),
    requestBody: body(triggerSchema, false),
    responses: authed({ "202": jsonOf(triggeredRunsSchema, "The runs made") }, 400, 404),
  }),
  backfill: operation("post", "/api/v1/schedules/{id}/backfill", {
    tags,
    summary: "A run per occurrence in [from, to] (each within the owner's and tenant's quotas)",
    requestParams: schedulePath(),
    requestBody: body(backfillSchema),
    responses: authed({ "202": jsonOf(backfilledRunsSchema, "The runs made") }, 400, 404),
  }),
  runs: operation("get", "/api/v1/schedules/{id}/runs", {
    tags,
    summary: "Its runs (jobs with scheduledFor), newest first",
    requestParams: { path: idPath("The schedule"), query: runsQuerySchema },
    responses: authed({ "200": jsonOf(scheduleRunPageSchema, "A page of runs") }, 400, 404),
  }),
  events: operation("get", "/api/v1/schedules/{id}/events", {
    tags,
    summary: "Occurrences that made no run (missed, skipped, buffered) and runs cancelled by a newer one",
    requestParams: schedulePath(),
    responses: authed({ "200": jsonOf(scheduleEventListSchema, "Its events, newest first") }, 404),
  }),
};

export const schedulesApi: ApiDescription = {
  tags: [{ name: "Schedules" }],
  operations: Object.values(scheduleOperations),
};

/** One entry per response schema; `tsc` reports the first that is not `true`. */
export const scheduleSchemasMatchTheirTypes: {
  schedule: Same<Out<typeof scheduleSchema>, Ret<typeof getSchedule>>;
  schedules: Same<Out<typeof scheduleListSchema>, Ret<typeof listSchedules>>;
  scheduleDeleted: Same<Out<typeof scheduleDeletedSchema>, Ret<typeof deleteSchedule>>;
  runs: Same<Out<typeof scheduleRunPageSchema>, Ret<typeof listScheduleRuns>>;
  scheduleEvents: Same<Out<typeof scheduleEventListSchema>, Ret<typeof listScheduleEvents>>;
  triggered: Same<Out<typeof triggeredRunsSchema>, Ret<typeof triggerSchedule>>;
  backfilled: Same<Out<typeof backfilledRunsSchema>, Ret<typeof backfillSchedule>>;
} = {
  schedule: true,
  schedules: true,
  scheduleDeleted: true,
  runs: true,
  scheduleEvents: true,
  triggered: true,
  backfilled: true,
};
