/**
 * Pause and resume. A pause names a scope: a queue, a job type, a tenant, or
 * any combination. From the moment it is recorded no job of the scope starts:
 * admission skips it, jobs already handed to graphile-worker are taken back
 * (their slots freed, their place in line kept), and a claim racing the pause
 * refuses to start. Running jobs finish, or are cancelled when asked.
 * Pauses live in the database, so they survive restarts.
 */
import { z } from "zod";
import { recordAudit } from "../audit";
import { requireOperator, requireTenant, resolveTenantFor } from "../auth/authorize";
import type { Principal } from "../auth/principal";
import { db, Prisma } from "../db";
import { AppError, notFound, parseOrThrow } from "../errors";
import { parseIdOr404 } from "../ids";
import { getTaskDefinition, queueNameSchema, queueNames } from "../jobs/registry";
import { requestCancel } from "../jobs/transitions";
import { admitQueue } from "./admitter";

export type PauseDto = {
  id: string;
  queue: string | null;
  type: string | null;
  tenant: { id: string; slug: string; name: string } | null;
  reason: string | null;
  cancelRunning: boolean;
  createdBy: string | null;
  createdAt: string;
  resumedAt: string | null;
  resumedBy: string | null;
};

const pauseInclude = {
  tenant: { select: { id: true, slug: true, name: true } },
  createdBy: { select: { email: true } },
  resumedBy: { select: { email: true } },
} as const;

type PauseRow = Prisma.QueuePauseGetPayload<{ include: typeof pauseInclude }>;

function toPauseDto(p: PauseRow): PauseDto {
  return {
    id: p.id,
    queue: p.queue,
    type: p.type,
    tenant: p.tenant,
    reason: p.reason,
    cancelRunning: p.cancelRunning,
    createdBy: p.createdBy?.email ?? null,
    createdAt: p.createdAt.toISOString(),
    resumedAt: p.resumedAt?.toISOString() ?? null,
    resumedBy: p.resumedBy?.email ?? null,
  };
}

const optionalName = (max: number) =>
  z
    .string()
    .trim()
    .min(1, "must not be empty")
    .max(max)
    .nullish()
    .transform((v) => v ?? undefined);

export const pauseBodySchema = z
  .object({
    queue: queueNameSchema("must be one of: ")
      .nullish()
      .transform((v) => v ?? undefined),
    type: optionalName(100).refine((t) => t === undefined || getTaskDefinition(t) !== undefined, "unknown job type"),
    /** A tenant's id or slug. Operators may name only their own (or leave it out). */
    tenant: optionalName(100),
    /** Also cancel the scope's running jobs (otherwise they finish). */
    cancelRunning: z.boolean({ error: "must be true or false" }).default(false),
    reason: z.string().trim().max(500, "must be at most 500 characters").nullish(),
  })
  .strict();

/** Pauses a scope; 409 when that exact scope is already paused. Operators (own tenant), platform admins. */
export async function createPause(
  principal: Principal,
  body: unknown,
): Promise<PauseDto & { heldBack: number; cancelled: number }> {
  requireOperator(principal);
  const input = parseOrThrow(pauseBodySchema, body);
  const tenantId = await resolveTenantFor(principal, input.tenant);
  if (!input.queue && !input.type && !tenantId) {
    throw new AppError("invalid_input", "Invalid input: queue: give at least one of queue, type, tenant", [
      { path: "queue", message: "give at least one of queue, type, tenant" },
    ]);
  }
  const scope = { queue: input.queue ?? null, type: input.type ?? null, tenantId };
  // The reaper locks running and admitted jobs too, in the other order: a rare
  // deadlock aborts one side, and this side simply tries again.
  for (let attempt = 1; ; attempt++) {
    try {
      return await pauseOnce(principal, input, scope);
    } catch (err) {
      if (err instanceof Prisma.PrismaClientKnownRequestError && err.code === "P2002") {
        throw new AppError("conflict", "This scope is already paused");
      }
      if (attempt < 3 && /deadlock detected|40P01/.test(String((err as Error).message))) continue;
      throw err;
    }
  }
}

async function pauseOnce(
  principal: Principal,
  input: z.infer<typeof pauseBodySchema>,
  scope: { queue: string | null; type: string | null; tenantId: string | null },
): Promise<PauseDto & { heldBack: number; cancelled: number }> {
  // The jobs the pause covers (the same rule as SQL's conveyor_paused).
  const inScope = Prisma.sql`(${scope.queue}::text IS NULL OR queue = ${scope.queue})
    AND (${scope.type}::text IS NULL OR type = ${scope.type})
    AND (${scope.tenantId}::uuid IS NULL OR tenant_id = ${scope.tenantId}::uuid)`;
  return db().$transaction(async (tx) => {
    const pause = await tx.queuePause.create({
      data: {
        ...scope,
        reason: input.reason || null,
        cancelRunning: input.cancelRunning,
        createdById: principal.userId,
      },
      include: pauseInclude,
    });
    // Take back what graphile-worker holds of the scope but has not started.
    // A dispatch already fetched by a worker is refused by its claim.
    const held = await tx.$queryRaw<{ n: bigint }[]>`
        WITH held AS (
          UPDATE jobs SET admitted_at = NULL
          WHERE admitted_at IS NOT NULL AND status IN ('queued', 'retrying')
            AND ${inScope}
          RETURNING id),
        removed AS (SELECT graphile_worker.remove_job(id::text) FROM held)
        SELECT (SELECT count(*) FROM held) AS n, (SELECT count(*) FROM removed) AS removed`;
    let cancelled: string[] = [];
    if (input.cancelRunning) {
      const running = await tx.$queryRaw<{ id: string }[]>`
          SELECT id FROM jobs WHERE status = 'running' AND cancel_requested_at IS NULL AND ${inScope}`;
      cancelled = await requestCancel(
        tx,
        running.map((r) => r.id),
        `A pause of its scope${input.reason ? `: ${input.reason}` : ""}`,
        { by: principal.userId },
      );
    }
    const heldBack = Number(held[0]?.n ?? 0);
    await recordAudit(
      principal,
      {
        action: "queue.pause",
        targetType: "pause",
        targetIds: [pause.id],
        tenantId: scope.tenantId,
        details: { ...scope, reason: pause.reason, cancelRunning: input.cancelRunning, heldBack, cancelled },
      },
      tx,
    );
    return { ...toPauseDto(pause), heldBack, cancelled: cancelled.length };
  });
}

/** Pauses a principal may see: platform admins all; operators their tenant's and the platform-wide ones. */
function visiblePauses(principal: Principal): Prisma.QueuePauseWhereInput {
  if (principal.isPlatformAdmin) return {};
  return { OR: [{ tenantId: requireTenant(principal) }, { tenantId: null }] };
}

export const listPausesSchema = z
  .object({
    /** `all` also lists resumed pauses (the newest 100). */
    state: z.enum(["active", "all"], { error: "must be active or all" }).default("active"),
  })
  .strict();

/** Active pauses (or all, newest first) that the principal may see. Operators, platform admins. */
export async function listPauses(principal: Principal, raw: unknown = {}): Promise<PauseDto[]> {
  requireOperator(principal);
  const { state } = parseOrThrow(listPausesSchema, raw);
  const rows = await db().queuePause.findMany({
    where: { ...visiblePauses(principal), ...(state === "active" ? { resumedAt: null } : {}) },
    include: pauseInclude,
    orderBy: { createdAt: "desc" },
    take: 100,
  });
  return rows.map(toPauseDto);
}

/**
 * Resumes: the pause ends and admission starts the scope's waiting jobs in
 * their order. Another tenant's pause answers 404; a platform-wide pause, or
 * one a platform admin set on a tenant, may be lifted by a platform admin only.
 */
export async function resumePause(principal: Principal, rawId: string): Promise<PauseDto> {
  requireOperator(principal);
  const id = parseIdOr404(rawId, "Pause not found");
  const pause = await db().$transaction(async (tx) => {
    const found = await tx.queuePause.findFirst({
      where: { id, ...visiblePauses(principal) },
      include: { createdBy: { select: { isPlatformAdmin: true } } },
    });
    if (!found) throw notFound("Pause not found");
    if (!principal.isPlatformAdmin && found.tenantId === null) {
      throw new AppError("forbidden", "This pause covers every tenant: only a platform admin can resume it");
    }
    if (!principal.isPlatformAdmin && found.createdBy?.isPlatformAdmin) {
      throw new AppError("forbidden", "A platform admin set this pause: only a platform admin can resume it");
    }
    const { count } = await tx.queuePause.updateMany({
      where: { id, resumedAt: null },
      data: { resumedAt: new Date(), resumedById: principal.userId },
    });
    if (count === 0) throw new AppError("conflict", "This pause was already resumed");
    await recordAudit(
      principal,
      {
        action: "queue.resume",
        targetType: "pause",
        targetIds: [id],
        tenantId: found.tenantId,
        details: { queue: found.queue, type: found.type, tenantId: found.tenantId },
      },
      tx,
    );
    return tx.queuePause.findUniqueOrThrow({ where: { id }, include: pauseInclude });
  });
  // Start the scope's waiting jobs now rather than at the next sweep.
  for (const q of pause.queue ? [pause.queue] : queueNames()) await admitQueue(q);
  return toPauseDto(pause);
}
