/**
 * The response bodies of the REST API as zod schemas, for the OpenAPI
 * document (lib/openapi/document.ts). The DTO types stay where they are made
 * (lib/jobs/dto.ts, lib/webhooks/service.ts, …); the checks at the end of this
 * file make `tsc` fail when a schema and the type its route returns drift
 * apart, in either direction (a field added to a DTO must be added here too).
 */
import { z } from "zod";
import type { Prisma } from "../generated/prisma/client";
import type { createPause, listPauses, resumePause } from "../admission/pauses";
import type { clearTenantLimit, getQueues, setTenantLimit, updateQueueSettings } from "../admission/queues";
import type { getHealth } from "../ops/health";
import type { acceptInvite, changeMemberRole, inviteUser, listInvites, listMembers } from "../auth/accounts";
import type { createApiToken, listApiTokens } from "../auth/tokens";
import type { listExportLinks } from "../exports/links";
import type { requestExport } from "../exports/service";
import type { createImportErrorsLink, getImport, listImports, requestImport } from "../imports/service";
import type { discardDeadLetters, listDeadLetters, replayDeadLetters } from "../jobs/dead-letters";
import type { getJobHistory } from "../jobs/history";
import type { getJob, getJobParts, listJobs } from "../jobs/queries";
import type { listAudit, listDeadLetterGroups, listStuckJobs, listWorkers } from "../ops/console";
import { STUCK_KINDS } from "../ops/console";
import type { getOpsJob, listOpsJobs, planJobAction, runJobAction } from "../ops/jobs";
import type { getOverview } from "../ops/stats";
import type { summarizePools } from "../ops/workers";
import type {
  backfillSchedule,
  deleteSchedule,
  getSchedule,
  listScheduleEvents,
  listScheduleRuns,
  listSchedules,
  triggerSchedule,
} from "../schedules/service";
import type { createTenant, listTenants } from "../tenants/settings";
import type { listUploads, toUploadDto } from "../uploads/service";
import type {
  createEndpoint,
  getDelivery,
  getEndpoint,
  listDeliveries,
  listEndpoints,
  recoverEndpoint,
  replayDelivery,
  rotateSecret,
  sendTestEvent,
} from "../webhooks/service";

const instant = z.iso.datetime({ offset: true });
const nullableInstant = instant.nullable();
const id = z.string().meta({ description: "A UUID" });

const jobStatus = z.enum(["scheduled", "queued", "running", "retrying", "succeeded", "failed", "cancelled", "expired"]);

// ── Errors ──────────────────────────────────────────────────────────────────

/** The one error envelope every route answers with (lib/http/respond.ts). */
export const errorBodySchema = z
  .object({
    error: z.object({
      code: z
        .enum([
          "invalid_input",
          "unauthorized",
          "forbidden",
          "not_found",
          "conflict",
          "gone",
          "payload_too_large",
          "rate_limited",
          "quota_exceeded",
          "internal",
        ])
        .meta({ description: "lib/errors.ts: each code has one HTTP status" }),
      message: z.string(),
      fields: z
        .array(z.object({ path: z.string(), message: z.string() }))
        .optional()
        .meta({ description: "Each failing field of a 400, by its path (`filter.to`, `(body)`)" }),
      details: z
        .record(z.string(), z.unknown())
        .optional()
        .meta({ description: "Beside the message: a quota's name, limit and use; a wait in seconds" }),
    }),
  })
  .meta({ id: "Error" });

// ── Jobs ────────────────────────────────────────────────────────────────────

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
  })
  .meta({ id: "JobFile" });

export const jobSchema = z
  .object({
    id,
    tenantId: id,
    type: z.string().meta({ description: "The task, e.g. export, export_part, import" }),
    queue: z.string(),
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
      children: z.object({ total: z.number().int(), done: z.number().int(), failed: z.number().int() }).nullable(),
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

const cursorPage = { nextCursor: z.string().nullable().meta({ description: "Pass as ?cursor= for the next page" }) };

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

const transitionSchema = z.object({
  from: z.string().nullable(),
  to: z.string(),
  attempt: z.number().int(),
  at: instant,
});

export const jobHistorySchema = z
  .object({ attempts: z.array(jobAttemptSchema), transitions: z.array(transitionSchema) })
  .meta({ id: "JobHistory" });

export const deadLetterReplaySchema = z.object({
  matched: z.number().int(),
  replayed: z.number().int(),
  jobIds: z.array(id),
});
export const deadLetterDiscardSchema = z.object({ matched: z.number().int(), discarded: z.number().int() });

// ── Exports, links, imports, uploads ───────────────────────────────────────

export const linkSchema = z
  .object({
    id,
    expiresAt: instant,
    revokedAt: nullableInstant,
    downloadCount: z.number().int(),
    createdAt: instant,
    url: z.string().optional().meta({ description: "The link itself: only in the answer that made it" }),
  })
  .meta({ id: "DownloadLink" });
export const linkListSchema = z.object({ links: z.array(linkSchema) });

const dataset = z.enum(["customers", "orders", "events"]);

export const importSchema = z
  .object({
    job: jobSchema,
    importId: id,
    request: z.object({
      uploadId: z.string(),
      dataset,
      format: z.enum(["csv", "jsonl"]),
      mode: z.enum(["insert", "upsert"]),
      maxBadRows: z.number().int(),
    }),
    fileName: z.string().nullable(),
    file: z.object({ size: z.number(), sha256: z.string(), rows: z.number(), columns: z.array(z.string()) }).nullable(),
    counts: z.object({
      rowsRead: z.number().nullable(),
      inserted: z.number().nullable(),
      updated: z.number().nullable(),
      rejected: z.number().nullable(),
      duplicates: z.number().nullable(),
    }),
    badRows: z.array(z.object({ line: z.number().int(), column: z.string(), reason: z.string() })),
    errorsFile: z.object({ size: z.number(), rows: z.number(), expiresAt: instant, url: z.string() }).nullable(),
    stages: z.array(
      z.object({
        name: z.string(),
        type: z.string(),
        status: z.string(),
        attempts: z.number().int(),
        startedAt: nullableInstant,
        finishedAt: nullableInstant,
        error: z.string().nullable(),
        jobId: id.nullable(),
        progress: z.object({
          done: z.number(),
          total: z.number().nullable(),
          unit: z.string().nullable(),
          message: z.string().nullable(),
          stage: z.string().nullable(),
          detail: z.record(z.string(), z.unknown()).nullable(),
        }),
      }),
    ),
  })
  .meta({ id: "Import" });
export const importListSchema = z.object({ imports: z.array(importSchema) });

export const uploadSchema = z
  .object({
    id: z.string(),
    filename: z.string(),
    contentType: z.string().nullable(),
    size: z.number(),
    received: z.number(),
    complete: z.boolean(),
    completedAt: nullableInstant,
    lastUsedAt: instant,
    importJobId: id.nullable(),
    createdAt: instant,
    url: z.string(),
  })
  .meta({ id: "Upload" });
export const uploadListSchema = z.object({ uploads: z.array(uploadSchema) });

// ── People, tokens, tenants ────────────────────────────────────────────────

const tenantRef = z.object({ id, slug: z.string(), name: z.string() });
const role = z.enum(["member", "operator"]);

export const inviteSchema = z
  .object({
    id,
    email: z.string(),
    tenant: tenantRef.nullable(),
    role: role.nullable(),
    platformAdmin: z.boolean(),
    state: z.enum(["expired", "pending", "accepted", "revoked"]),
    expiresAt: instant,
    createdAt: instant,
    createdBy: z.string().nullable(),
    link: z.string().optional().meta({ description: "The invitation link: only in the answer that made it" }),
    mailed: z.boolean().optional(),
  })
  .meta({ id: "Invite" });
export const inviteListSchema = z.object({ invites: z.array(inviteSchema) });
export const acceptedInviteSchema = z.object({ email: z.string() });

export const memberSchema = z
  .object({ userId: id, email: z.string(), name: z.string(), role, since: instant })
  .meta({ id: "Member" });
export const memberListSchema = z.object({ members: z.array(memberSchema) });

export const tokenSchema = z
  .object({
    id,
    name: z.string(),
    prefix: z.string(),
    scopes: z.array(z.enum(["read", "write"])),
    expiresAt: nullableInstant,
    createdAt: instant,
    lastUsedAt: nullableInstant,
  })
  .meta({ id: "ApiToken" });
export const tokenListSchema = z.object({ tokens: z.array(tokenSchema) });
export const createdTokenSchema = z.object({
  token: z.string().meta({ description: "The secret (cvy_…), shown this once" }),
  record: tokenSchema,
});

const quotas = { jobsPerUser: z.number(), jobsPerTenant: z.number(), exportBytes: z.number() };
export const tenantSchema = z
  .object({
    id,
    slug: z.string(),
    name: z.string(),
    exportRetentionDays: z.number().int().nullable(),
    effectiveRetentionDays: z.number().int(),
    quotas: z.object({
      jobsPerUser: quotas.jobsPerUser.nullable(),
      jobsPerTenant: quotas.jobsPerTenant.nullable(),
      exportBytes: quotas.exportBytes.nullable(),
    }),
    effectiveQuotas: z.object(quotas),
    retention: z
      .object({
        jobDays: z.number().int().nullable(),
        deadLetterDays: z.number().int().nullable(),
        auditDays: z.number().int().nullable(),
      })
      .meta({ description: "The tenant's own retention in days (null: the platform default)" }),
    effectiveRetention: z
      .object({ jobs: z.number().int(), deadLetters: z.number().int(), audit: z.number().int() })
      .meta({ description: "The days the pruner applies" }),
  })
  .meta({ id: "Tenant" });
export const tenantListSchema = z.object({ tenants: z.array(tenantSchema) });

// ── Operations console ─────────────────────────────────────────────────────

export const pauseSchema = z
  .object({
    id,
    queue: z.string().nullable(),
    type: z.string().nullable(),
    tenant: tenantRef.nullable(),
    reason: z.string().nullable(),
    cancelRunning: z.boolean(),
    createdBy: z.string().nullable(),
    createdAt: instant,
    resumedAt: nullableInstant,
    resumedBy: z.string().nullable(),
  })
  .meta({ id: "Pause" });
export const pauseListSchema = z.object({ pauses: z.array(pauseSchema) });
export const createdPauseSchema = pauseSchema.extend({
  heldBack: z.number().int().meta({ description: "Waiting jobs the pause holds back" }),
  cancelled: z.number().int().meta({ description: "Running jobs asked to stop (cancelRunning)" }),
});

const queueName = z.enum(["interactive", "bulk", "webhooks"]);
const counts = {
  waiting: z.number().int(),
  scheduled: z.number().int(),
  admitted: z.number().int(),
  running: z.number().int(),
};
export const queuesSchema = z.object({
  queues: z.array(
    z
      .object({
        ...counts,
        name: queueName,
        tenantCap: z.number().int(),
        window: z.number().int(),
        updatedBy: z.string().nullable(),
        configuredAt: nullableInstant,
        paused: z.boolean(),
        pauses: z.array(pauseSchema),
        tenants: z.array(
          z.object({
            ...counts,
            tenant: tenantRef,
            cap: z.number().int(),
            capOverride: z.number().int().nullable(),
            weight: z.number(),
            paused: z.boolean(),
          }),
        ),
      })
      .meta({ id: "Queue" }),
  ),
});
export const queueSettingsSchema = z
  .object({
    name: queueName,
    tenantCap: z.number().int(),
    window: z.number().int(),
    updatedBy: z.string().nullable(),
    configuredAt: nullableInstant,
  })
  .meta({ id: "QueueSettings" });

const healthState = z.enum(["ok", "warning", "behind"]);
const signal = z.object({
  value: z.number().nullable(),
  state: healthState,
  warning: z.number(),
  behind: z.number(),
});
const healthRow = z
  .object({
    queue: z.string(),
    tenant: z.object({ id, slug: z.string() }).nullable(),
    state: healthState,
    signals: z.object({
      oldestReadyAge: signal,
      startLatencyP95: signal,
      utilisation: signal,
      retryRate: signal,
      deadLettersPerHour: signal,
    }),
    oldestReadyAt: nullableInstant,
    started: z.number().int(),
    retries: z.number().int(),
    deadLastHour: z.number().int(),
    busy: z.number().int(),
    capacity: z.number().int(),
    liveWorkers: z.number().int().nullable(),
  })
  .meta({ id: "HealthRow" });
export const opsHealthSchema = z
  .object({
    at: instant,
    statsTo: nullableInstant,
    windowMinutes: z.number().int(),
    queues: z.array(healthRow).meta({ description: "Fleet-wide per queue: platform admins only" }),
    tenants: z.array(healthRow),
  })
  .meta({ id: "OpsHealth" });

export const tenantLimitSchema = z.object({
  queue: queueName,
  tenantId: id,
  maxRunning: z.number().int().nullable(),
  weight: z.number(),
});

export const stuckJobListSchema = z.object({
  jobs: z.array(
    z.object({
      id,
      tenantId: id,
      type: z.string(),
      queue: z.string(),
      status: z.string(),
      attempts: z.number().int(),
      maxAttempts: z.number().int(),
      input: z.unknown(),
      kind: z.enum(STUCK_KINDS),
      since: instant,
      detail: z.string(),
      suggestion: z.string(),
      pause: z
        .object({
          id,
          queue: z.string().nullable(),
          type: z.string().nullable(),
          reason: z.string().nullable(),
          by: z.string().nullable(),
          since: instant,
        })
        .nullable(),
      admitted: z.boolean(),
    }),
  ),
});

export const deadLetterGroupListSchema = z.object({
  groups: z.array(
    z.object({
      type: z.string(),
      errorClass: z.string().nullable(),
      fingerprint: z.string().nullable(),
      sample: z.string().nullable(),
      count: z.number().int(),
      firstAt: instant,
      lastAt: instant,
      tenants: z.number().int(),
    }),
  ),
});

export const auditPageSchema = z.object({
  entries: z.array(
    z.object({
      id: z.string(),
      at: instant,
      tenant: z.object({ id, slug: z.string() }).nullable(),
      actor: z.string().nullable(),
      viaToken: z.boolean(),
      action: z.string(),
      targetType: z.string().nullable(),
      targetIds: z.array(z.string()),
      details: z.unknown(),
    }),
  ),
  ...cursorPage,
});

// A stored JSON value, or null. zod's JSON type spells Prisma's JsonValue differently (Prisma's object
// members are optional), so it is named as that type: the values they allow are the same.
const json = z.json().meta({ id: "JsonValue" }).nullable() as unknown as z.ZodType<Prisma.JsonValue | null>;
export const opsJobSchema = z.object({
  job: jobSchema,
  parts: z.array(jobSchema),
  attempts: z.array(jobAttemptSchema),
  transitions: z.array(transitionSchema),
  audit: z.array(
    z.object({ id: z.string(), at: instant, actor: z.string().nullable(), action: z.string(), details: json }),
  ),
});
export const opsJobPageSchema = z.object({
  jobs: z.array(jobSchema),
  ...cursorPage,
  tenants: z.record(z.string(), z.string()).meta({ description: "Tenant id → slug, for the jobs listed" }),
});
export const jobActionPlanSchema = z.object({
  action: z.string(),
  dryRun: z.literal(true),
  matched: z.number().int(),
  moreThanLimit: z.boolean(),
  applicable: z.number().int(),
  ids: z.array(id),
});
export const jobActionResultSchema = z.object({
  action: z.string(),
  matched: z.number().int(),
  affected: z.number().int(),
});

const window = z.object({
  succeeded: z.number(),
  failed: z.number(),
  perMinute: z.number(),
  failureRate: z.number().nullable(),
});
const seriesPoint = z.object({
  at: instant,
  succeeded: z.number(),
  failed: z.number(),
  dead: z.number(),
  p50Ms: z.number().nullable(),
  p99Ms: z.number().nullable(),
});
export const overviewSchema = z.object({
  tenant: z.string().nullable(),
  countsAt: nullableInstant,
  statsTo: nullableInstant,
  rows: z.array(
    z.object({
      queue: z.string(),
      type: z.string(),
      queued: z.number(),
      scheduled: z.number(),
      running: z.number(),
      retrying: z.number(),
      dead: z.number(),
      oldestQueuedAt: nullableInstant,
      last5m: window,
      last1h: window,
      p50Ms: z.number().nullable(),
      p99Ms: z.number().nullable(),
    }),
  ),
  totals: z.object({
    scheduled: z.number(),
    queued: z.number(),
    running: z.number(),
    retrying: z.number(),
    dead: z.number(),
    last5m: window,
    last1h: window,
    oldestQueuedAt: nullableInstant,
  }),
  series: z.object({ hour: z.array(seriesPoint), day: z.array(seriesPoint) }),
});

const workerSchema = z.object({
  id: z.string(),
  host: z.string(),
  pid: z.number().int(),
  version: z.string(),
  queues: z.array(z.string()),
  concurrency: z.number().int(),
  runningJobs: z.number().int(),
  startedAt: instant,
  heartbeatAt: instant,
  stoppedAt: nullableInstant,
  state: z.string(),
  restarts: z.number().int(),
  previousExit: z.string().nullable(),
});
const workerPoolSchema = z.object({
  host: z.string(),
  queues: z.array(z.string()),
  live: z.number().int(),
  unresponsive: z.number().int(),
  exited: z.number().int(),
  concurrency: z.number().int(),
  runningJobs: z.number().int(),
  restarts: z.number().int(),
  previousExit: z.string().nullable(),
  startedAt: instant,
  lastExitAt: nullableInstant,
});
export const workersSchema = z.object({ workers: z.array(workerSchema), pools: z.array(workerPoolSchema) });

// ── Schedules ──────────────────────────────────────────────────────────────

export const scheduleSchema = z
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
    createdBy: z.string().nullable(),
    createdAt: instant,
    updatedAt: instant,
  })
  .meta({ id: "Schedule" });
export const scheduleListSchema = z.object({ schedules: z.array(scheduleSchema) });
export const scheduleDeletedSchema = z.object({ deleted: z.literal(true), cancelledRuns: z.number().int() });
export const scheduleRunPageSchema = z.object({ runs: z.array(jobSchema), ...cursorPage });
export const scheduleEventListSchema = z.object({
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
export const triggeredRunsSchema = z.object({
  runs: z.array(id).meta({ description: "The ids of the runs made" }),
  skipped: z.number().int(),
  cancelled: z.number().int(),
  quotaSkipped: z.number().int().meta({
    description: "Occurrences whose run the quotas of the schedule's owner or tenant refused (quota_skipped events)",
  }),
});
export const backfilledRunsSchema = triggeredRunsSchema.extend({ occurrences: z.number().int() });

// ── Webhooks ───────────────────────────────────────────────────────────────

export const endpointSchema = z
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
      waiting: z.number().int(),
      pending: z.number().int(),
      dead: z.number().int(),
    }),
  })
  .meta({ id: "WebhookEndpoint" });
export const endpointListSchema = z.object({ endpoints: z.array(endpointSchema) });
export const createdEndpointSchema = z.object({
  endpoint: endpointSchema,
  secret: z.string().meta({ description: "The signing secret (whsec_…), shown this once" }),
});
export const rotatedSecretSchema = z.object({ secret: z.string(), previousSecretExpiresAt: instant });

export const deliverySchema = z
  .object({
    id,
    endpointId: id,
    messageId: z.string(),
    eventType: z.string(),
    status: z.enum(["failed", "cancelled", "pending", "delivered"]),
    jobId: id,
    jobStatus: z.string(),
    requests: z.number().int(),
    lastStatusCode: z.number().int().nullable(),
    lastError: z.string().nullable(),
    lastAttemptAt: nullableInstant,
    nextAttemptAt: nullableInstant,
    deliveredAt: nullableInstant,
    createdAt: instant,
  })
  .meta({ id: "WebhookDelivery" });
export const deliveryPageSchema = z.object({ deliveries: z.array(deliverySchema), ...cursorPage });
export const deliveryDetailSchema = deliverySchema.extend({
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
export const recoveredSchema = z.object({ replayed: z.number().int() });
export const testEventSchema = z.object({ messageId: z.string(), deliveryId: id });

// ── Health ─────────────────────────────────────────────────────────────────

export const healthSchema = z.object({ ok: z.boolean() });

// ── The schemas against the types the routes return ────────────────────────

/** True when A and B are assignable both ways (the schema neither lacks nor adds a field). */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Out<S extends z.ZodType> = z.output<S>;
type Ret<F extends (...args: never[]) => unknown> = Awaited<ReturnType<F>>;

/**
 * One entry per response schema; `tsc` reports the first that is not `true`.
 * (The bodies the routes build around a list, `{ links: [...] }`, are checked the same way.)
 */
export const schemasMatchTheirTypes: {
  job: Same<Out<typeof jobSchema>, Ret<typeof getJob>>;
  jobPage: Same<Out<typeof jobPageSchema>, Ret<typeof listJobs>>;
  jobParts: Same<Out<typeof jobPartsSchema>, { parts: Ret<typeof getJobParts> }>;
  history: Same<Out<typeof jobHistorySchema>, Ret<typeof getJobHistory>>;
  deadLetters: Same<Out<typeof jobPageSchema>, Ret<typeof listDeadLetters>>;
  replayDead: Same<Out<typeof deadLetterReplaySchema>, Ret<typeof replayDeadLetters>>;
  discardDead: Same<Out<typeof deadLetterDiscardSchema>, Ret<typeof discardDeadLetters>>;
  links: Same<Out<typeof linkListSchema>, { links: Ret<typeof listExportLinks> }>;
  link: Same<Out<typeof linkSchema>, Ret<typeof createImportErrorsLink>>;
  exportJob: Same<Out<typeof jobSchema>, Ret<typeof requestExport>["job"]>;
  importJob: Same<Out<typeof jobSchema>, Ret<typeof requestImport>["job"]>;
  import: Same<Out<typeof importSchema>, Ret<typeof getImport>>;
  imports: Same<Out<typeof importListSchema>, { imports: Ret<typeof listImports> }>;
  upload: Same<Out<typeof uploadSchema>, Ret<typeof toUploadDto>>;
  uploads: Same<Out<typeof uploadListSchema>, { uploads: Ret<typeof listUploads> }>;
  invite: Same<Out<typeof inviteSchema>, Ret<typeof inviteUser>>;
  invites: Same<Out<typeof inviteListSchema>, { invites: Ret<typeof listInvites> }>;
  accepted: Same<Out<typeof acceptedInviteSchema>, Ret<typeof acceptInvite>>;
  member: Same<Out<typeof memberSchema>, Ret<typeof changeMemberRole>>;
  members: Same<Out<typeof memberListSchema>, { members: Ret<typeof listMembers> }>;
  tokens: Same<Out<typeof tokenListSchema>, { tokens: Ret<typeof listApiTokens> }>;
  createdToken: Same<Out<typeof createdTokenSchema>, Ret<typeof createApiToken>>;
  tenant: Same<Out<typeof tenantSchema>, Ret<typeof createTenant>>;
  tenants: Same<Out<typeof tenantListSchema>, { tenants: Ret<typeof listTenants> }>;
  pause: Same<Out<typeof pauseSchema>, Ret<typeof resumePause>>;
  createdPause: Same<Out<typeof createdPauseSchema>, Ret<typeof createPause>>;
  pauses: Same<Out<typeof pauseListSchema>, { pauses: Ret<typeof listPauses> }>;
  queues: Same<Out<typeof queuesSchema>, Ret<typeof getQueues>>;
  queueSettings: Same<Out<typeof queueSettingsSchema>, Ret<typeof updateQueueSettings>>;
  opsHealth: Same<Out<typeof opsHealthSchema>, Ret<typeof getHealth>>;
  tenantLimit: Same<Out<typeof tenantLimitSchema>, Ret<typeof setTenantLimit>>;
  tenantLimitCleared: Same<Out<typeof tenantLimitSchema>, Ret<typeof clearTenantLimit>>;
  stuck: Same<Out<typeof stuckJobListSchema>, { jobs: Ret<typeof listStuckJobs> }>;
  deadGroups: Same<Out<typeof deadLetterGroupListSchema>, { groups: Ret<typeof listDeadLetterGroups> }>;
  audit: Same<Out<typeof auditPageSchema>, Ret<typeof listAudit>>;
  opsJob: Same<Out<typeof opsJobSchema>, Ret<typeof getOpsJob>>;
  opsJobs: Same<Out<typeof opsJobPageSchema>, Ret<typeof listOpsJobs>>;
  plan: Same<Out<typeof jobActionPlanSchema>, Ret<typeof planJobAction>>;
  action: Same<Out<typeof jobActionResultSchema>, Ret<typeof runJobAction>>;
  overview: Same<Out<typeof overviewSchema>, Ret<typeof getOverview>>;
  workers: Same<
    Out<typeof workersSchema>,
    { workers: Ret<typeof listWorkers>; pools: ReturnType<typeof summarizePools> }
  >;
  schedule: Same<Out<typeof scheduleSchema>, Ret<typeof getSchedule>>;
  schedules: Same<Out<typeof scheduleListSchema>, Ret<typeof listSchedules>>;
  scheduleDeleted: Same<Out<typeof scheduleDeletedSchema>, Ret<typeof deleteSchedule>>;
  runs: Same<Out<typeof scheduleRunPageSchema>, Ret<typeof listScheduleRuns>>;
  scheduleEvents: Same<Out<typeof scheduleEventListSchema>, Ret<typeof listScheduleEvents>>;
  triggered: Same<Out<typeof triggeredRunsSchema>, Ret<typeof triggerSchedule>>;
  backfilled: Same<Out<typeof backfilledRunsSchema>, Ret<typeof backfillSchedule>>;
  endpoint: Same<Out<typeof endpointSchema>, Ret<typeof getEndpoint>>;
  endpoints: Same<Out<typeof endpointListSchema>, { endpoints: Ret<typeof listEndpoints> }>;
  createdEndpoint: Same<Out<typeof createdEndpointSchema>, Ret<typeof createEndpoint>>;
  rotated: Same<Out<typeof rotatedSecretSchema>, Ret<typeof rotateSecret>>;
  delivery: Same<Out<typeof deliverySchema>, Ret<typeof replayDelivery>>;
  deliveries: Same<Out<typeof deliveryPageSchema>, Ret<typeof listDeliveries>>;
  deliveryDetail: Same<Out<typeof deliveryDetailSchema>, Ret<typeof getDelivery>>;
  recovered: Same<Out<typeof recoveredSchema>, Ret<typeof recoverEndpoint>>;
  testEvent: Same<Out<typeof testEventSchema>, Ret<typeof sendTestEvent>>;
} = {
  job: true,
  jobPage: true,
  jobParts: true,
  history: true,
  deadLetters: true,
  replayDead: true,
  discardDead: true,
  links: true,
  link: true,
  exportJob: true,
  importJob: true,
  import: true,
  imports: true,
  upload: true,
  uploads: true,
  invite: true,
  invites: true,
  accepted: true,
  member: true,
  members: true,
  tokens: true,
  createdToken: true,
  tenant: true,
  tenants: true,
  pause: true,
  createdPause: true,
  pauses: true,
  queues: true,
  queueSettings: true,
  opsHealth: true,
  tenantLimit: true,
  tenantLimitCleared: true,
  stuck: true,
  deadGroups: true,
  audit: true,
  opsJob: true,
  opsJobs: true,
  plan: true,
  action: true,
  overview: true,
  workers: true,
  schedule: true,
  schedules: true,
  scheduleDeleted: true,
  runs: true,
  scheduleEvents: true,
  triggered: true,
  backfilled: true,
  endpoint: true,
  endpoints: true,
  createdEndpoint: true,
  rotated: true,
  delivery: true,
  deliveries: true,
  deliveryDetail: true,
  recovered: true,
  testEvent: true,
};
