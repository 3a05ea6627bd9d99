/**
 * The engine's API, described: jobs (read, cancel, replay, history, parts, live events) and the
 * dead-letter queue, with the response schemas of a job that every workload answering with a job
 * shares (lib/api-doc.ts says how; lib/openapi/document.ts assembles). The checks at the end make
 * `tsc` fail when a schema and the type its route returns drift apart, in either direction.
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
  nullableInstant,
  operation,
  sseResponse,
  type ApiDescription,
  type Out,
  type Ret,
  type Same,
} from "../api-doc";
import { cancelBodySchema } from "./actions";
import { priorityField } from "./priority-names";
import {
  deadLetterActionSchema,
  listDeadLettersSchema,
  type discardDeadLetters,
  type listDeadLetters,
  type replayDeadLetters,
} from "./dead-letters";
import type { getJobHistory } from "./history";
import { listJobsQuerySchema, type getJob, type getJobParts, type listJobs } from "./queries";

const jobStatus = z.enum(["scheduled", "queued", "running", "retrying", "succeeded", "failed", "cancelled", "expired"]);

export const jobFileSchema = z
  .object({
    id,
    name: z.string(),
    size: z.number().meta({ description: "Bytes" }),
    sha256: z.string(),
    rows: z.number(),
    contentType: z.string(),
    downloadUrl: z.string(),
    expiresAt: instant,
    downloadCount: z.number().int(),
    expired: z.boolean(),
    partial: z.boolean().meta({ description: "The finished parts of an export some of whose parts failed" }),
    replacedBy: id.nullable().meta({
      description:
        "The file that replaced this one (a repaired export's complete archive): downloadUrl and this file's links give it",
    }),
  })
  .meta({ id: "JobFile" });

export const jobSchema = z
  .object({
    id,
    tenantId: id,
    type: z.string().meta({ description: "The task, e.g. export, export_part, import" }),
    queue: z.string(),
    priority: priorityField.meta({
      description: "Its place among its tenant's waiting jobs: high first, then normal, then low",
    }),
    status: jobStatus,
    input: z.unknown().meta({ description: "The job's input, as the task's schema parsed it" }),
    progress: z.object({
      done: z.number(),
      total: z.number().nullable(),
      unit: z.string().nullable(),
      stage: z.string().nullable(),
      message: z.string().nullable(),
      detail: z.record(z.string(), z.unknown()).nullable(),
      bytes: z.number().nullable(),
      rate: z.number().nullable().meta({
        description:
          "Units per second over the last 30 s of this run, as of the answer; null before there is enough to tell or when it does not run",
      }),
      samples: z
        .array(z.tuple([z.number(), z.number()]))
        .nullable()
        .meta({
          description:
            "This run's recent [time in ms since the epoch (the database's clock), done] samples, one every 2 s at most, for a client that recomputes the rate as time passes",
        }),
      children: z
        .object({
          total: z.number().int(),
          done: z.number().int(),
          failed: z.number().int(),
          retrying: z
            .number()
            .int()
            .meta({ description: "Children waiting for or running an attempt after a failed one" }),
          retries: z
            .array(
              z.object({
                index: z.number().int().meta({ description: "Its place among the children (0-based)" }),
                status: z.enum(["retrying", "running"]),
                attempt: z.number().int().meta({ description: "The attempt that waits (retrying) or runs" }),
                maxAttempts: z.number().int(),
                runAt: instant.meta({ description: "When a waiting retry is due" }),
              }),
            )
            .meta({ description: "The first five children in a retry, by place" }),
        })
        .nullable(),
    }),
    seq: z.number().int().meta({ description: "Per-job event sequence number (the SSE event id)" }),
    attempts: z.number().int(),
    maxAttempts: z.number().int(),
    createdAt: instant,
    startedAt: nullableInstant,
    finishedAt: nullableInstant,
    runAt: instant,
    error: z.object({ class: z.string().nullable(), message: z.string() }).nullable(),
    cancelRequested: z
      .object({ at: instant, byUserId: id.nullable(), by: z.string().nullable(), reason: z.string().nullable() })
      .nullable(),
    parentId: id.nullable(),
    childIndex: z.number().int().nullable(),
    replayOfId: id.nullable(),
    requestedBy: z.string().nullable(),
    scheduleId: id.nullable(),
    scheduledFor: nullableInstant,
    result: z.object({ rows: z.number().optional(), files: z.array(jobFileSchema) }).nullable(),
    admission: z.enum(["admitted", "waiting", "paused"]).nullable(),
    pause: z
      .object({
        id: id.nullable(),
        queue: z.string().nullable(),
        type: z.string().nullable(),
        reason: z.string().nullable(),
        by: z.string().nullable(),
        since: nullableInstant,
        via: z.enum(["self", "parts"]),
      })
      .nullable(),
  })
  .meta({ id: "Job" });

export const jobPageSchema = z.object({ jobs: z.array(jobSchema), ...cursorPage }).meta({ id: "JobPage" });
export const jobPartsSchema = z.object({ parts: z.array(jobSchema) });

export const jobAttemptSchema = z
  .object({
    attempt: z.number().int(),
    resume: z.number().int(),
    workerId: z.string().nullable(),
    startedAt: instant,
    finishedAt: nullableInstant,
    outcome: z.string(),
    durationMs: z.number().nullable(),
    error: z
      .object({ class: z.string().nullable(), message: z.string().nullable(), stack: z.string().nullable() })
      .nullable(),
  })
  .meta({ id: "JobAttempt" });

export const transitionSchema = z.object({
  from: z.string().nullable(),
  to: z.string(),
  attempt: z.number().int(),
  at: instant,
});

export const jobHistorySchema = z
  .object({ attempts: z.array(jobAttemptSchema), transitions: z.array(transitionSchema) })
  .meta({ id: "JobHistory" });

const deadLetterReplaySchema = z.object({
  matched: z.number().int(),
  replayed: z.number().int(),
  jobIds: z.array(id),
});
const deadLetterDiscardSchema = z.object({ matched: z.number().int(), discarded: z.number().int() });

/** The engine's job routes; `list`, `get`, `events` and `tenantEvents` are hot routes (direct). */
export const jobOperations = {
  list: operation(
    "get",
    "/api/v1/jobs",
    {
      tags: ["Jobs"],
      summary: "The tenant's jobs, newest first",
      description: "Keyset-paginated: pass `nextCursor` back as `cursor`.",
      requestParams: { query: listJobsQuerySchema },
      responses: authed({ "200": jsonOf(jobPageSchema, "A page of jobs") }, 400),
    },
    { direct: { kind: "api" } },
  ),
  get: operation(
    "get",
    "/api/v1/jobs/{id}",
    {
      tags: ["Jobs"],
      summary: "One job with its progress and result",
      requestParams: { path: idPath("The job") },
      responses: authed({ "200": jsonOf(jobSchema, "The job") }, 404),
    },
    { direct: { kind: "api" } },
  ),
  cancel: operation("post", "/api/v1/jobs/{id}/cancel", {
    tags: ["Jobs"],
    summary: "Cancel a waiting job at once, or signal a running one",
    requestParams: { path: idPath("The job") },
    requestBody: body(cancelBodySchema, false),
    responses: authed({ "200": jsonOf(jobSchema, "The job, cancelled or asked to stop") }, 400, 404, 409, 413),
  }),
  replay: operation("post", "/api/v1/jobs/{id}/replay", {
    tags: ["Jobs"],
    summary:
      "Operators: run a failed or cancelled job again, as a new job (a dead part: its export, which reruns only its dead parts)",
    requestParams: { path: idPath("The job to replay") },
    responses: authed({ "201": created(jobSchema, "The new job") }, 404, 409),
  }),
  history: operation("get", "/api/v1/jobs/{id}/history", {
    tags: ["Jobs"],
    summary: "Every attempt and the status timeline",
    requestParams: { path: idPath("The job") },
    responses: authed({ "200": jsonOf(jobHistorySchema, "Attempts and transitions, oldest first") }, 404),
  }),
  parts: operation("get", "/api/v1/jobs/{id}/parts", {
    tags: ["Jobs"],
    summary: "A job's child jobs (a split export's parts)",
    requestParams: { path: idPath("The parent job") },
    responses: authed({ "200": jsonOf(jobPartsSchema, "Its parts, in order") }, 404),
  }),
  events: operation(
    "get",
    "/api/v1/jobs/{id}/events",
    {
      tags: ["Jobs"],
      summary: "Live progress of one job (Server-Sent Events)",
      requestParams: { path: idPath("The job") },
      responses: authed({ "200": sseResponse("A snapshot, then progress and status until the job ends") }, 404),
    },
    { direct: { kind: "stream" } },
  ),
  tenantEvents: operation(
    "get",
    "/api/v1/events",
    {
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
    { direct: { kind: "stream" } },
  ),
  deadLetters: operation("get", "/api/v1/dead-letters", {
    tags: ["Dead letters"],
    summary: "Operators: the tenant's failed jobs, newest first",
    requestParams: { query: listDeadLettersSchema },
    responses: authed({ "200": jsonOf(jobPageSchema, "A page of dead jobs") }, 400),
  }),
  replayDead: operation("post", "/api/v1/dead-letters/replay", {
    tags: ["Dead letters"],
    summary: "Operators: replay dead jobs by ids or by filter",
    requestBody: body(deadLetterActionSchema),
    responses: authed({ "200": jsonOf(deadLetterReplaySchema, "How many matched, and the new jobs") }, 400, 413),
  }),
  discardDead: operation("post", "/api/v1/dead-letters/discard", {
    tags: ["Dead letters"],
    summary: "Operators: remove dead jobs from the queue by ids or by filter",
    requestBody: body(deadLetterActionSchema),
    responses: authed({ "200": jsonOf(deadLetterDiscardSchema, "How many matched and were discarded") }, 400, 413),
  }),
};

const { deadLetters, replayDead, discardDead, ...jobRoutes } = jobOperations;
export const jobsApi: ApiDescription = { tags: [{ name: "Jobs" }], operations: Object.values(jobRoutes) };
export const deadLettersApi: ApiDescription = {
  tags: [{ name: "Dead letters" }],
  operations: [deadLetters, replayDead, discardDead],
};

/** One entry per response schema; `tsc` reports the first that is not `true`. */
export const jobSchemasMatchTheirTypes: {
  job: Same<Out<typeof jobSchema>, Ret<typeof getJob>>;
  jobPage: Same<Out<typeof jobPageSchema>, Ret<typeof listJobs>>;
  jobParts: Same<Out<typeof jobPartsSchema>, { parts: Ret<typeof getJobParts> }>;
  history: Same<Out<typeof jobHistorySchema>, Ret<typeof getJobHistory>>;
  deadLetters: Same<Out<typeof jobPageSchema>, Ret<typeof listDeadLetters>>;
  replayDead: Same<Out<typeof deadLetterReplaySchema>, Ret<typeof replayDeadLetters>>;
  discardDead: Same<Out<typeof deadLetterDiscardSchema>, Ret<typeof discardDeadLetters>>;
} = {
  job: true,
  jobPage: true,
  jobParts: true,
  history: true,
  deadLetters: true,
  replayDead: true,
  discardDead: true,
};
