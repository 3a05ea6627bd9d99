/**
 * What people do to jobs: cancel, replay, and the dead-letter queue (list,
 * replay one or all that match a filter, discard). Every action is scoped by
 * the principal's tenant and written to the audit log.
 */
import { z } from "zod";
import { recordAudit } from "../audit";
import { isOperator, tenantScope, type Principal } from "../auth/principal";
import { db, Prisma } from "../db";
import { AppError, notFound, parseOrThrow } from "../errors";
import type { JobModel } from "../generated/prisma/models";
import { isUuid, parseIdOr404 } from "../ids";
import { isoInstant } from "../validation";
import { pauseScopesFor } from "../admission/pause-scopes";
import { jobView } from "./catalog";
import { isTerminal, type JobDto } from "./dto";

type Tx = Prisma.TransactionClient;

/** Operators act on their tenant's queues; platform admins everywhere; members may not. */
export function requireOperator(principal: Principal): void {
  if (!isOperator(principal)) throw new AppError("forbidden", "This action needs the operator role");
}

async function lockJob(tx: Tx, principal: Principal, id: string): Promise<JobModel> {
  const scope = tenantScope(principal);
  const rows = await tx.$queryRaw<{ id: string }[]>`
    SELECT id FROM jobs WHERE id = ${id}::uuid
      AND (${scope.tenantId ?? null}::uuid IS NULL OR tenant_id = ${scope.tenantId ?? null}::uuid)
    FOR UPDATE`;
  if (!rows[0]) throw notFound("Job not found");
  return tx.job.findUniqueOrThrow({ where: { id } });
}

/**
 * Cancels a job. Waiting: cancelled at once, its dispatch removed, it never
 * starts. Running: a cancel request that reaches its worker through NOTIFY; the
 * attempt aborts, cleans its partial output and the job ends `cancelled`.
 * Finished: 409. Members may cancel their own tenant's jobs.
 */
export async function cancelJob(principal: Principal, rawId: string): Promise<JobDto> {
  const id = parseIdOr404(rawId, "Job not found");
  const job = await db().$transaction(async (tx) => {
    const job = await lockJob(tx, principal, id);
    if (isTerminal(job.status)) throw new AppError("conflict", `The job is already ${job.status}`);
    const by = `Cancelled by ${principal.email}`;
    let updated: JobModel;
    if (job.status === "running") {
      // Its worker stops it. A job waiting for its parts runs nowhere: the database ends it
      // at once (trigger jobs_cancel_waiting), so read it back as the triggers left it.
      if (!job.cancelRequestedAt) {
        await tx.job.update({
          where: { id },
          data: { cancelRequestedAt: new Date(), progressMessage: `${by}; stopping…` },
        });
      }
      updated = await tx.job.findUniqueOrThrow({ where: { id } });
    } else {
      updated = await tx.job.update({
        where: { id },
        data: {
          status: "cancelled",
          cancelRequestedAt: new Date(),
          finishedAt: new Date(),
          errorClass: "cancelled",
          errorMessage: by,
        },
      });
      // Its dispatch is unlocked (not running): remove it so no worker wakes for it.
      await tx.$executeRaw`SELECT graphile_worker.remove_job(${id}::text)`;
    }
    await recordAudit(
      principal,
      {
        action: "job.cancel",
        targetType: "job",
        targetIds: [id],
        tenantId: job.tenantId,
        details: { status: job.status },
      },
      tx,
    );
    return updated;
  });
  return jobView(job);
}

/**
 * The replay of a dead job; the original leaves the dead-letter queue (its
 * history stays). Null when the original already left it (replayed or
 * discarded, perhaps by a concurrent request): a dead job is replayed once.
 */
async function replayOne(tx: Tx, principal: Principal, original: JobModel): Promise<JobModel | null> {
  const { count } = await tx.job.updateMany({
    where: { id: original.id, discardedAt: null },
    data: { discardedAt: new Date() },
  });
  if (count === 0) return null;
  const replay = await tx.job.create({
    data: {
      tenantId: original.tenantId,
      type: original.type,
      // Replays are bulk work: a batch of them never delays a user's own request.
      queue: "bulk",
      priority: original.priority,
      status: "queued",
      input: original.input as Prisma.InputJsonValue,
      inputHash: original.inputHash,
      maxAttempts: original.maxAttempts,
      createdById: principal.userId,
      parentId: original.parentId,
      replayOfId: original.id,
    },
  });
  return replay;
}

const DEAD: JobModel["status"][] = ["failed", "cancelled"];

/** Replays a dead (failed or cancelled) job as a new job with a fresh budget, linked to the original. Operators. */
export async function replayJob(principal: Principal, rawId: string): Promise<JobDto> {
  requireOperator(principal);
  const id = parseIdOr404(rawId, "Job not found");
  const replay = await db().$transaction(async (tx) => {
    const original = await lockJob(tx, principal, id);
    if (original.parentId) {
      // Its export gathered what there was when it ended; a lone part would change nothing.
      throw new AppError("conflict", "This is a part of an export: replay the export instead");
    }
    if (!DEAD.includes(original.status)) {
      throw new AppError("conflict", `Only failed or cancelled jobs can be replayed; this one is ${original.status}`);
    }
    const replay = await replayOne(tx, principal, original);
    if (!replay) throw new AppError("conflict", "This job was already replayed or discarded");
    await recordAudit(
      principal,
      {
        action: "job.replay",
        targetType: "job",
        targetIds: [id],
        tenantId: original.tenantId,
        details: { replayId: replay.id },
      },
      tx,
    );
    return replay;
  });
  return jobView(replay, [], await pauseScopesFor([replay]));
}

export const deadLetterFilterSchema = z
  .object({
    type: z.string().min(1).max(100).optional(),
    errorClass: z.string().min(1).max(50).optional(),
    /** One group of GET /api/v1/ops/dead-letters: the masked error message. */
    fingerprint: z.string().min(1).max(500).optional(),
    /** Searches the error message. */
    q: z.string().min(1).max(200).optional(),
    from: isoInstant.optional(),
    to: isoInstant.optional(),
  })
  .strict();

export type DeadLetterFilter = z.infer<typeof deadLetterFilterSchema>;

export const deadLetterActionSchema = z
  .object({
    ids: z.array(z.string().refine(isUuid, "must be a job id")).min(1).max(1000).optional(),
    filter: deadLetterFilterSchema.optional(),
  })
  .strict()
  .refine((v) => Boolean(v.ids) !== Boolean(v.filter), { message: "give either ids or filter", path: ["ids"] });

function deadWhere(principal: Principal, f: DeadLetterFilter, ids?: string[]): Prisma.JobWhereInput {
  return {
    ...tenantScope(principal),
    status: "failed",
    discardedAt: null,
    ...(ids ? { id: { in: ids } } : {}),
    ...(f.type ? { type: f.type } : {}),
    ...(f.errorClass ? { errorClass: f.errorClass } : {}),
    ...(f.fingerprint ? { errorFingerprint: f.fingerprint } : {}),
    ...(f.q ? { errorMessage: { contains: f.q, mode: "insensitive" as const } } : {}),
    ...(f.from || f.to
      ? { finishedAt: { ...(f.from ? { gte: new Date(f.from) } : {}), ...(f.to ? { lt: new Date(f.to) } : {}) } }
      : {}),
  };
}

export const listDeadLettersSchema = deadLetterFilterSchema.extend({
  cursor: z.string().refine(isUuid, "not a cursor from a previous page").optional(),
  limit: z.coerce.number({ error: "must be a number" }).int().min(1).max(100).default(20),
});

/** The dead-letter queue: failed, not discarded jobs, newest failure first (keyset by id). Operators. */
export async function listDeadLetters(
  principal: Principal,
  raw: unknown,
): Promise<{ jobs: JobDto[]; nextCursor: string | null }> {
  requireOperator(principal);
  const { cursor, limit, ...filter } = parseOrThrow(listDeadLettersSchema, raw);
  const rows = await db().job.findMany({
    where: { ...deadWhere(principal, filter), ...(cursor ? { id: { lt: cursor } } : {}) },
    orderBy: { id: "desc" },
    take: limit + 1,
  });
  const page = rows.slice(0, limit);
  return { jobs: page.map((j) => jobView(j)), nextCursor: rows.length > limit ? (page.at(-1)?.id ?? null) : null };
}

const BULK_LIMIT = 10_000;

/** Replays every dead job matching ids or a filter (at most 10,000 per call). Operators. */
export async function replayDeadLetters(
  principal: Principal,
  body: unknown,
): Promise<{ matched: number; replayed: number; jobIds: string[] }> {
  requireOperator(principal);
  const { ids, filter } = parseOrThrow(deadLetterActionSchema, body);
  return db().$transaction(
    async (tx) => {
      // Many inserts in one long transaction: admitting inline would hold the bulk
      // queue's admission lock until commit. The workers' admitters take them instead.
      await tx.$executeRaw`SET LOCAL conveyor.admit_inline = 'off'`;
      const originals = await tx.job.findMany({
        where: deadWhere(principal, filter ?? {}, ids),
        orderBy: { id: "asc" },
        take: BULK_LIMIT,
      });
      const jobIds: string[] = [];
      for (const original of originals) {
        if (original.parentId) continue; // an export's part: its export is replayed, not the part
        const replay = await replayOne(tx, principal, original);
        if (replay) jobIds.push(replay.id);
      }
      await recordAudit(
        principal,
        {
          action: "dead_letters.replay",
          targetType: "job",
          targetIds: originals.map((o) => o.id),
          details: { filter: filter ?? null, replays: jobIds },
        },
        tx,
      );
      return { matched: originals.length, replayed: jobIds.length, jobIds };
    },
    { timeout: 120_000 },
  );
}

/** Discards dead jobs matching ids or a filter: they leave the dead-letter queue (history is kept). Operators. */
export async function discardDeadLetters(
  principal: Principal,
  body: unknown,
): Promise<{ matched: number; discarded: number }> {
  requireOperator(principal);
  const { ids, filter } = parseOrThrow(deadLetterActionSchema, body);
  return db().$transaction(async (tx) => {
    const rows = await tx.job.findMany({
      where: deadWhere(principal, filter ?? {}, ids),
      select: { id: true },
      take: BULK_LIMIT,
    });
    const { count } = await tx.job.updateMany({
      where: { id: { in: rows.map((r) => r.id) } },
      data: { discardedAt: new Date() },
    });
    await recordAudit(
      principal,
      {
        action: "dead_letters.discard",
        targetType: "job",
        targetIds: rows.map((r) => r.id),
        details: { filter: filter ?? null },
      },
      tx,
    );
    return { matched: rows.length, discarded: count };
  });
}

export type AttemptDto = {
  attempt: number;
  workerId: string;
  startedAt: string;
  finishedAt: string | null;
  outcome: string;
  durationMs: number | null;
  error: { class: string | null; message: string | null; stack: string | null } | null;
};

/** A job's attempts and status timeline. 404 for another tenant's job. */
export type JobHistory = {
  attempts: AttemptDto[];
  transitions: { from: string | null; to: string; attempt: number; at: string }[];
};

export async function getJobHistory(principal: Principal, rawId: string): Promise<JobHistory> {
  const id = parseIdOr404(rawId, "Job not found");
  const job = await db().job.findFirst({ where: { id, ...tenantScope(principal) }, include: historyInclude });
  if (!job) throw notFound("Job not found");
  return historyOf(job);
}

/** What a job's history query includes: attempts and transitions, oldest first. */
export const historyInclude = {
  attemptsHistory: { orderBy: { attempt: "asc" } },
  transitions: { orderBy: { id: "asc" } },
} as const;

/** A job's attempts and timeline, from a row loaded with `historyInclude`. */
export function historyOf(job: Prisma.JobGetPayload<{ include: typeof historyInclude }>): JobHistory {
  return {
    attempts: job.attemptsHistory.map((a) => ({
      attempt: a.attempt,
      workerId: a.workerId,
      startedAt: a.startedAt.toISOString(),
      finishedAt: a.finishedAt?.toISOString() ?? null,
      outcome: a.outcome,
      durationMs: a.durationMs,
      error:
        a.errorClass || a.errorMessage ? { class: a.errorClass, message: a.errorMessage, stack: a.errorStack } : null,
    })),
    transitions: job.transitions.map((t) => ({
      from: t.fromStatus,
      to: t.toStatus,
      attempt: t.attempt,
      at: t.at.toISOString(),
    })),
  };
}
