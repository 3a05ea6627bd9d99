/**
 * The operator console's read side: dead letters grouped by error, stuck jobs
 * with a suggested action, the worker fleet (platform admins) and the audit
 * log. Operators see their own tenant; platform admins every tenant (with an
 * optional tenant filter).
 */
import { z } from "zod";
import { requireOperator, requirePlatformAdmin, resolveTenantFor } from "../auth/authorize";
import type { Principal } from "../auth/principal";
import { db } from "../db";
import { env } from "../env";
import { parseOrThrow } from "../errors";
import { isoInstant } from "../validation";
import type { WorkerDto } from "./workers";

/** The tenant a console query covers: the operator's own, or (admins) the named one or all. */
export async function consoleTenant(principal: Principal, tenant: string | undefined): Promise<string | null> {
  requireOperator(principal);
  return resolveTenantFor(principal, tenant);
}

const tenantParam = z.string().trim().min(1).max(100).optional();

// ── Dead letters, grouped ────────────────────────────────────────────────────

export type DeadLetterGroupDto = {
  type: string;
  errorClass: string | null;
  fingerprint: string | null;
  /** One message of the group, as it was. */
  sample: string | null;
  count: number;
  firstAt: string;
  lastAt: string;
  tenants: number;
};

export const deadLetterGroupsSchema = z.object({ tenant: tenantParam }).strict();

/**
 * The dead-letter queue grouped by job type, error class and fingerprint (the
 * message with ids and numbers masked), largest first: "312 failed with this
 * error since 10:42". Replay a group with POST /api/v1/dead-letters/replay and
 * `{ filter: { type, errorClass, fingerprint } }`.
 */
export async function listDeadLetterGroups(principal: Principal, raw: unknown): Promise<DeadLetterGroupDto[]> {
  const { tenant } = parseOrThrow(deadLetterGroupsSchema, raw);
  const tenantId = await consoleTenant(principal, tenant);
  const rows = await db().$queryRaw<
    {
      type: string;
      errorClass: string | null;
      fingerprint: string | null;
      sample: string | null;
      count: bigint;
      firstAt: Date;
      lastAt: Date;
      tenants: bigint;
    }[]
  >`
    SELECT type, error_class AS "errorClass", error_fingerprint AS fingerprint, min(error_message) AS sample,
           count(*) AS count, min(finished_at) AS "firstAt", max(finished_at) AS "lastAt",
           count(DISTINCT tenant_id) AS tenants
    FROM jobs
    WHERE status = 'failed' AND discarded_at IS NULL
      AND (${tenantId}::uuid IS NULL OR tenant_id = ${tenantId}::uuid)
    GROUP BY 1, 2, 3
    ORDER BY count(*) DESC, max(finished_at) DESC
    LIMIT 200`;
  return rows.map((r) => ({
    ...r,
    count: Number(r.count),
    tenants: Number(r.tenants),
    firstAt: r.firstAt.toISOString(),
    lastAt: r.lastAt.toISOString(),
  }));
}

// ── Stuck jobs ───────────────────────────────────────────────────────────────

export type StuckJobDto = {
  id: string;
  tenantId: string;
  type: string;
  queue: string;
  status: string;
  attempts: number;
  maxAttempts: number;
  /** Why it is listed. */
  kind: "lease_expired" | "no_heartbeat" | "queued_too_long" | "retrying_repeatedly";
  /** Since when the condition holds. */
  since: string;
  detail: string;
  /** What an operator would do about it. */
  suggestion: string;
};

export const stuckSchema = z
  .object({
    tenant: tenantParam,
    /** A running job whose last heartbeat is older than this is listed. Default: 3 heartbeats of its worker. */
    heartbeatSeconds: z.coerce.number({ error: "must be a number" }).int().min(1).max(86_400).optional(),
    /** A due job not started after this long is listed. */
    queuedMinutes: z.coerce.number({ error: "must be a number" }).int().min(1).max(10_080).default(10),
    /** A retrying job past this many attempts is listed. */
    attempts: z.coerce.number({ error: "must be a number" }).int().min(2).max(1_000).default(3),
  })
  .strict();

/**
 * Jobs that need a look: running with an expired lease or a silent heartbeat,
 * due but not started for `queuedMinutes`, or retrying again and again; each
 * with the suggested action. At most 100 of each kind, oldest first.
 */
export async function listStuckJobs(principal: Principal, raw: unknown): Promise<StuckJobDto[]> {
  const q = parseOrThrow(stuckSchema, raw);
  const tenantId = await consoleTenant(principal, q.tenant);
  const heartbeatSeconds = q.heartbeatSeconds ?? Math.ceil((3 * env().WORKER_HEARTBEAT_MS) / 1000);
  const rows = await db().$queryRaw<
    (Omit<StuckJobDto, "since" | "suggestion" | "detail"> & {
      since: Date;
      paused: boolean;
      admitted: boolean;
      errorMessage: string | null;
    })[]
  >`
    (SELECT id, tenant_id AS "tenantId", type, queue, status::text, attempts, max_attempts AS "maxAttempts",
            CASE WHEN lease_expires_at < now() THEN 'lease_expired' ELSE 'no_heartbeat' END AS kind,
            CASE WHEN lease_expires_at < now() THEN lease_expires_at ELSE heartbeat_at END AS since,
            false AS paused, true AS admitted, error_message AS "errorMessage"
     FROM jobs
     WHERE status = 'running' AND (${tenantId}::uuid IS NULL OR tenant_id = ${tenantId}::uuid)
       AND (lease_expires_at < now() OR heartbeat_at < now() - make_interval(secs => ${heartbeatSeconds}::float8))
     ORDER BY 6 LIMIT 100)
    UNION ALL
    (SELECT id, tenant_id, type, queue, status::text, attempts, max_attempts, 'queued_too_long', run_at,
            conveyor_paused(queue, type, tenant_id), admitted_at IS NOT NULL, error_message
     FROM jobs
     WHERE status = 'queued' AND (${tenantId}::uuid IS NULL OR tenant_id = ${tenantId}::uuid)
       AND run_at < now() - make_interval(mins => ${q.queuedMinutes}::int)
     ORDER BY run_at LIMIT 100)
    UNION ALL
    (SELECT id, tenant_id, type, queue, status::text, attempts, max_attempts, 'retrying_repeatedly', started_at,
            false, admitted_at IS NOT NULL, error_message
     FROM jobs
     WHERE status = 'retrying' AND (${tenantId}::uuid IS NULL OR tenant_id = ${tenantId}::uuid)
       AND attempts >= ${q.attempts}
     ORDER BY attempts DESC LIMIT 100)`;
  return rows.map(({ paused, admitted, errorMessage, since, ...r }) => {
    const { detail, suggestion } = advise(r.kind, { paused, admitted, errorMessage, attempts: r.attempts });
    return { ...r, since: since.toISOString(), detail, suggestion };
  });
}

function advise(
  kind: StuckJobDto["kind"],
  j: { paused: boolean; admitted: boolean; errorMessage: string | null; attempts: number },
): { detail: string; suggestion: string } {
  switch (kind) {
    case "lease_expired":
      return {
        detail: "Its worker stopped renewing the lease.",
        suggestion: "Wait for the reaper (about a second); if it stays, check that a worker is running.",
      };
    case "no_heartbeat":
      return {
        detail: "Its lease holds but the heartbeat is late: the worker may be stalled.",
        suggestion: "Check the worker on the Workers page; cancel the job if it must stop now.",
      };
    case "queued_too_long":
      return j.paused
        ? { detail: "Its scope is paused.", suggestion: "Resume the pause on the Queues page, or cancel the job." }
        : j.admitted
          ? {
              detail: "Admitted, but no worker took it.",
              suggestion: "Start a worker for its queue (npm run worker -- --queues <queue>).",
            }
          : {
              detail: "Waiting for a slot: its tenant is at its cap or the queue is full.",
              suggestion: "Raise the tenant's cap on the Queues page, or add workers.",
            };
    case "retrying_repeatedly":
      return {
        detail: `${j.attempts} attempts so far; last error: ${j.errorMessage ?? "unknown"}`,
        suggestion: "Fix the cause, or cancel it; it reaches the dead-letter queue when its budget runs out.",
      };
  }
}

// ── Workers ──────────────────────────────────────────────────────────────────

export type { WorkerDto, WorkerPoolDto } from "./workers";

/** The worker fleet from the registry: live ones first, then the newest stopped or dead (100). Platform admins. */
export async function listWorkers(principal: Principal): Promise<WorkerDto[]> {
  requirePlatformAdmin(principal, "The worker fleet");
  const [workers, running] = await Promise.all([
    db().worker.findMany({
      orderBy: [{ stoppedAt: { sort: "desc", nulls: "first" } }, { startedAt: "desc" }],
      take: 100,
    }),
    db().$queryRaw<{ owner: string; n: bigint }[]>`
      SELECT lease_owner AS owner, count(*) AS n FROM jobs WHERE status = 'running' GROUP BY 1`,
  ]);
  const deadAfter = env().WORKER_DEAD_AFTER_MS;
  return workers.map((w) => ({
    id: w.id,
    host: w.host,
    pid: w.pid,
    version: w.version,
    queues: w.queues,
    concurrency: w.concurrency,
    runningJobs: Number(running.find((r) => r.owner === w.id)?.n ?? 0),
    startedAt: w.startedAt.toISOString(),
    heartbeatAt: w.heartbeatAt.toISOString(),
    stoppedAt: w.stoppedAt?.toISOString() ?? null,
    state: w.state === "running" && Date.now() - w.heartbeatAt.getTime() > deadAfter ? "unresponsive" : w.state,
    restarts: w.restarts,
    previousExit: w.previousExit,
  }));
}

// ── Audit log ────────────────────────────────────────────────────────────────

export type AuditEntryDto = {
  id: string;
  at: string;
  tenant: { id: string; slug: string } | null;
  actor: string | null;
  viaToken: boolean;
  action: string;
  targetType: string | null;
  targetIds: string[];
  details: unknown;
};

export const auditQuerySchema = z
  .object({
    tenant: tenantParam,
    /** An action, or a prefix ending in `.` (`queue.` for every queue action). */
    action: z.string().trim().min(1).max(100).optional(),
    /** Part of the actor's e-mail. */
    actor: z.string().trim().min(1).max(200).optional(),
    /** A job, pause or token id the entry is about. */
    target: z.string().trim().min(1).max(100).optional(),
    from: isoInstant.optional(),
    to: isoInstant.optional(),
    cursor: z
      .string()
      .regex(/^[0-9]{1,19}$/, "not a cursor from a previous page")
      .optional(),
    limit: z.coerce.number({ error: "must be a number" }).int().min(1).max(200).default(50),
  })
  .strict();

/** The audit log, newest first, keyset-paged. Operators (own tenant), platform admins (all, or one tenant). */
export async function listAudit(
  principal: Principal,
  raw: unknown,
): Promise<{ entries: AuditEntryDto[]; nextCursor: string | null }> {
  const q = parseOrThrow(auditQuerySchema, raw);
  const tenantId = await consoleTenant(principal, q.tenant);
  const rows = await db().auditLog.findMany({
    where: {
      ...(tenantId ? { tenantId } : {}),
      ...(q.action ? (q.action.endsWith(".") ? { action: { startsWith: q.action } } : { action: q.action }) : {}),
      ...(q.actor ? { actorUser: { email: { contains: q.actor, mode: "insensitive" as const } } } : {}),
      ...(q.target ? { targetIds: { has: q.target } } : {}),
      ...(q.from || q.to
        ? { createdAt: { ...(q.from ? { gte: new Date(q.from) } : {}), ...(q.to ? { lt: new Date(q.to) } : {}) } }
        : {}),
      ...(q.cursor ? { id: { lt: BigInt(q.cursor) } } : {}),
    },
    include: { actorUser: { select: { email: true } }, tenant: { select: { id: true, slug: true } } },
    orderBy: { id: "desc" },
    take: q.limit + 1,
  });
  const page = rows.slice(0, q.limit);
  return {
    entries: page.map((r) => ({
      id: r.id.toString(),
      at: r.createdAt.toISOString(),
      tenant: r.tenant,
      actor: r.actorUser?.email ?? null,
      viaToken: r.actorTokenId !== null,
      action: r.action,
      targetType: r.targetType,
      targetIds: r.targetIds,
      details: r.details,
    })),
    nextCursor: rows.length > q.limit ? (page.at(-1)?.id.toString() ?? null) : null,
  };
}
