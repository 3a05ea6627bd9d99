/**
 * The operator console's read side: dead letters grouped by error, stuck jobs
 * with a suggested action (stuck.ts), the worker fleet (platform admins) and the audit
 * log. Operators see their own tenant; platform admins every tenant (with an
 * optional tenant filter). Each reads the read replica when there is one fit to read
 * (lib/read-db.ts), else the primary.
 */
import { z } from "zod";
import { requirePlatformAdmin } from "../auth/authorize";
import type { Principal } from "../auth/principal";
import { env } from "../env";
import { parseOrThrow } from "../errors";
import { withReadDb } from "../read-db";
import { isoInstant } from "../validation";
import { consoleTenant, tenantParam } from "./console-tenant";
import type { WorkerDto } from "./workers";

export { consoleTenant } from "./console-tenant";
export * from "./stuck";

// ── Dead letters, grouped ────────────────────────────────────────────────────

export type DeadLetterGroupDto = {
  type: string;
  queue: string;
  errorClass: string | null;
  fingerprint: string | null;
  /** One message of the group, as it was. */
  sample: string | null;
  count: number;
  /** The most attempts one of its jobs made (what "gave up after" counts, for the engine's budget). */
  attempts: number;
  firstAt: string;
  lastAt: string;
  tenants: number;
};

/** The console's filters, as the CLI's `dead-letters list` takes them (and `tenant` for platform admins). */
export const deadLetterGroupsSchema = z
  .object({
    tenant: tenantParam,
    queue: z.string().trim().min(1).max(100).optional(),
    type: z.string().trim().min(1).max(100).optional(),
    errorClass: z.string().trim().min(1).max(50).optional(),
    /** Failed at or after this time. */
    from: isoInstant.optional(),
  })
  .strict();

/**
 * The dead-letter queue grouped by job type, error class and fingerprint (the message with
 * ids, workers, hosts, durations and numbers masked: lib/jobs/fingerprint.ts), largest first:
 * "312 failed with this error since 10:42". One entry per job a person sees: a pipeline's
 * stage (an import's parse, an export's part) fails its parent, which is the one listed.
 * Filtered by queue, type, error class and time (and tenant, platform admins). Replay a group
 * with POST /api/v1/dead-letters/replay and `{ filter: { type, errorClass, fingerprint, … } }`.
 */
export async function listDeadLetterGroups(principal: Principal, raw: unknown): Promise<DeadLetterGroupDto[]> {
  const { tenant, queue, type, errorClass, from } = parseOrThrow(deadLetterGroupsSchema, raw);
  const tenantId = await consoleTenant(principal, tenant);
  const rows = await withReadDb(
    principal,
    (rdb) => rdb.$queryRaw<
      {
        type: string;
        queue: string;
        errorClass: string | null;
        fingerprint: string | null;
        sample: string | null;
        count: bigint;
        attempts: number;
        firstAt: Date;
        lastAt: Date;
        tenants: bigint;
      }[]
    >`
    SELECT type, min(queue) AS queue, error_class AS "errorClass", error_fingerprint AS fingerprint,
           min(error_message) AS sample, count(*) AS count, max(attempts)::int AS attempts,
           min(finished_at) AS "firstAt", max(finished_at) AS "lastAt", count(DISTINCT tenant_id) AS tenants
    FROM jobs
    WHERE status = 'failed' AND discarded_at IS NULL AND parent_id IS NULL
      AND (${tenantId}::uuid IS NULL OR tenant_id = ${tenantId}::uuid)
      AND (${queue ?? null}::text IS NULL OR queue = ${queue ?? null})
      AND (${type ?? null}::text IS NULL OR type = ${type ?? null})
      AND (${errorClass ?? null}::text IS NULL OR error_class = ${errorClass ?? null})
      AND (${from ?? null}::timestamptz IS NULL OR finished_at >= ${from ?? null}::timestamptz)
    GROUP BY type, error_class, error_fingerprint
    ORDER BY count(*) DESC, max(finished_at) DESC
    LIMIT 200`,
  );
  return rows.map((r) => ({
    ...r,
    count: Number(r.count),
    tenants: Number(r.tenants),
    firstAt: r.firstAt.toISOString(),
    lastAt: r.lastAt.toISOString(),
  }));
}

// ── Workers ──────────────────────────────────────────────────────────────────

export type { WorkerDto, WorkerPoolDto } from "./workers";

/** The worker fleet from the registry: live ones first, then the newest stopped or dead (100). Platform admins. */
export async function listWorkers(principal: Principal): Promise<WorkerDto[]> {
  requirePlatformAdmin(principal, "The worker fleet");
  const [workers, running] = await withReadDb(principal, (rdb) =>
    Promise.all([
      rdb.worker.findMany({
        orderBy: [{ stoppedAt: { sort: "desc", nulls: "first" } }, { startedAt: "desc" }],
        take: 100,
      }),
      rdb.$queryRaw<{ owner: string; n: bigint }[]>`
        SELECT lease_owner AS owner, count(*) AS n FROM jobs WHERE status = 'running' GROUP BY 1`,
    ]),
  );
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
  const rows = await withReadDb(principal, (rdb) =>
    rdb.auditLog.findMany({
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
    }),
  );
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
