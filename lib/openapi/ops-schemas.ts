/**
 * The response bodies of the operations console and the platform routes (lib/openapi/ops.ts
 * describes the routes). The checks at the end make `tsc` fail when a schema and the type its
 * route returns drift apart, in either direction (a field added to a DTO must be added here too).
 */
import { z } from "zod";
import type { Prisma } from "../generated/prisma/client";
import { cursorPage, id, instant, nullableInstant, type Out, type Ret, type Same } from "../api-doc";
import type { createPause, listPauses, resumePause } from "../admission/pauses";
import type { clearTenantLimit, getQueues, setTenantLimit, updateQueueSettings } from "../admission/queues";
import { jobAttemptSchema, jobSchema, transitionSchema } from "../jobs/openapi";
import type { getTenantPriority, setTenantPriority } from "../jobs/priority";
import { maxPriorityNames, priorityField } from "../jobs/priority-names";
import type { getHealth } from "../ops/health";
import type { listAudit, listDeadLetterGroups, listStuckJobs, listWorkers } from "../ops/console";
import { STUCK_KINDS } from "../ops/console";
import type { getOpsJob, listOpsJobs, planJobAction, runJobAction } from "../ops/jobs";
import type { getOverview } from "../ops/stats";
import type { summarizePools } from "../ops/workers";
import type { createTenant, listTenants } from "../tenants/settings";
import { tenantRef } from "./people";

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

export const tenantPriorityViewSchema = z
  .object({
    tenant: z.object({ id, slug: z.string() }),
    maxPriority: z
      .enum(maxPriorityNames)
      .meta({ description: "The highest priority the tenant's callers may ask for" }),
    allowed: z.array(priorityField).meta({ description: "What a create may say, lowest first" }),
  })
  .meta({ id: "TenantPriority" });

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

const queueName = z.string().meta({ description: "interactive, bulk, or a queue a workload brings (webhooks)" });
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
      queue: z.string(),
      errorClass: z.string().nullable(),
      fingerprint: z.string().nullable(),
      sample: z.string().nullable(),
      count: z.number().int(),
      attempts: z.number().int().meta({ description: "The most attempts one of its jobs made" }),
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
  readFrom: z
    .enum(["replica", "primary"])
    .describe(
      "Where this overview was read: the read replica, or the primary (none, not fit, or the reader just wrote)",
    ),
  replica: z
    .object({
      state: z.enum(["unknown", "ok", "lagging", "down", "not_standby"]),
      readsFrom: z.enum(["replica", "primary"]).describe("Where reads of someone without recent writes go now"),
      lagMs: z.number().nullable().describe("How far behind the replica was at the last probe, in ms (at most)"),
      lagBytes: z.number().nullable().describe("WAL bytes flushed on the primary and not yet replayed on the replica"),
      maxLagMs: z.number().describe("DATABASE_REPLICA_MAX_LAG_MS: past it reads fall back to the primary"),
      probedAt: nullableInstant,
    })
    .nullable()
    .describe("The read replica (DATABASE_REPLICA_URL); null when none is configured"),
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

/** One entry per response schema; `tsc` reports the first that is not `true`. */
export const opsSchemasMatchTheirTypes: {
  tenant: Same<Out<typeof tenantSchema>, Ret<typeof createTenant>>;
  tenantPriority: Same<Out<typeof tenantPriorityViewSchema>, Ret<typeof setTenantPriority>>;
  tenantPriorityRead: Same<Out<typeof tenantPriorityViewSchema>, Ret<typeof getTenantPriority>>;
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
} = {
  tenant: true,
  tenantPriority: true,
  tenantPriorityRead: true,
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
};
