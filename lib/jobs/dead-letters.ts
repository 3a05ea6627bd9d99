/**
 * The dead-letter queue: failed jobs not yet replayed or discarded. List them,
 * replay one or all that match a filter (each replay a new job with a fresh
 * budget, linked to the original), or discard them. Operators; every action is
 * scoped by the principal's tenant and audited.
 */
import { z } from "zod";
import { recordAuditPerTenant } from "../audit";
import { requireOperator, tenantScope } from "../auth/authorize";
import type { Principal } from "../auth/principal";
import { db, type Prisma } from "../db";
import { parseOrThrow } from "../errors";
import { isUuid } from "../ids";
import { isoInstant } from "../validation";
import { replayOne } from "./actions";
import type { JobDto } from "./dto";
import { jobView } from "./view";

export const deadLetterFilterSchema = z
  .object({
    type: z.string().min(1).max(100).optional(),
    queue: z.string().min(1).max(100).optional(),
    /** A platform admin's filter: one tenant's (slug or id); others see their own tenant's only. */
    tenant: z.string().min(1).max(100).optional(),
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
    ...(f.queue ? { queue: f.queue } : {}),
    ...(f.tenant
      ? isUuid(f.tenant)
        ? { tenant: { OR: [{ id: f.tenant }, { slug: f.tenant }] } }
        : { tenant: { slug: f.tenant } }
      : {}),
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
      const replayOf = new Map<string, string>();
      for (const original of originals) {
        if (original.parentId) continue; // a child (an export's part): its parent is replayed, not the child
        const replay = await replayOne(tx, principal, original);
        if (replay) {
          jobIds.push(replay.id);
          replayOf.set(original.id, replay.id);
        }
      }
      await recordAuditPerTenant(
        principal,
        { action: "dead_letters.replay", targetType: "job" },
        originals,
        tx,
        (_tenant, ids) => ({ filter: filter ?? null, replays: ids.flatMap((id) => replayOf.get(id) ?? []) }),
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
      select: { id: true, tenantId: true },
      take: BULK_LIMIT,
    });
    const count = await tx.$executeRaw`
      UPDATE jobs SET discarded_at = now() WHERE id = ANY(${rows.map((r) => r.id)}::uuid[]) AND discarded_at IS NULL`;
    await recordAuditPerTenant(
      principal,
      { action: "dead_letters.discard", targetType: "job", details: { filter: filter ?? null } },
      rows,
      tx,
    );
    return { matched: rows.length, discarded: count };
  });
}
