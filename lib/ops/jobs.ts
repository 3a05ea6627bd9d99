/**
 * The operator console's jobs explorer: every job of the tenant (admins: of
 * every tenant) by status, type, queue, time and text; one job with its whole
 * story; and bulk actions on ids or on everything a filter matches.
 */
import { z } from "zod";
import { recordAudit } from "../audit";
import { tenantScope, type Principal } from "../auth/principal";
import { db, Prisma } from "../db";
import { AppError, notFound, parseOrThrow } from "../errors";
import { isUuid, parseIdOr404 } from "../ids";
import { pauseScopesFor } from "../admission/pause-scopes";
import { admitQueue } from "../admission/admitter";
import { cancelJob, historyInclude, historyOf, replayJob, requireOperator } from "../jobs/actions";
import { getTaskDefinition } from "../jobs/catalog";
import { toJobDto, type JobDto } from "../jobs/dto";
import { decodeCursor, encodeCursor, jobStatuses } from "../jobs/queries";
import { QUEUES } from "../jobs/task";
import { isoInstant } from "../validation";
import { consoleTenant } from "./console";

export const opsJobFilterSchema = z
  .object({
    status: z.enum(jobStatuses, { error: `must be one of ${jobStatuses.join(", ")}` }).optional(),
    type: z.string().trim().min(1).max(100).optional(),
    queue: z.enum(QUEUES, { error: `must be one of ${QUEUES.join(", ")}` }).optional(),
    /** Platform admins: a tenant's id or slug. */
    tenant: z.string().trim().min(1).max(100).optional(),
    /** Searched in the input (as JSON text) and the error message. */
    q: z.string().trim().min(1).max(200).optional(),
    from: isoInstant.optional(),
    to: isoInstant.optional(),
  })
  .strict();

export type OpsJobFilter = z.infer<typeof opsJobFilterSchema>;

export const listOpsJobsSchema = opsJobFilterSchema.extend({
  cursor: z.string().max(200).optional(),
  limit: z.coerce.number({ error: "must be a number" }).int().min(1).max(100).default(50),
});

/** The input as operators see it: fields the task marks sensitive are redacted. */
export function redactInput(type: string, input: unknown): unknown {
  const sensitive = getTaskDefinition(type)?.sensitive ?? [];
  if (!sensitive.length || !input || typeof input !== "object" || Array.isArray(input)) return input;
  const out: Record<string, unknown> = { ...(input as Record<string, unknown>) };
  for (const key of sensitive) if (key in out) out[key] = "[redacted]";
  return out;
}

/** `%`, `_` and `\\` in a search term match themselves. */
function likePattern(q: string): string {
  return `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/**
 * A filter as SQL conditions, one query against the jobs indexes: tenant (or
 * none, for platform admins), status, type, queue, creation time, and text in
 * the input or error, served by the trigram index `jobs_search_idx` (the same
 * expression must be used here for the index to apply).
 */
async function filterConditions(principal: Principal, f: OpsJobFilter): Promise<Prisma.Sql[]> {
  const tenantId = await consoleTenant(principal, f.tenant);
  const conds: Prisma.Sql[] = [Prisma.sql`true`];
  if (tenantId) conds.push(Prisma.sql`tenant_id = ${tenantId}::uuid`);
  if (f.status) conds.push(Prisma.sql`status = ${f.status}::job_status`);
  if (f.type) conds.push(Prisma.sql`type = ${f.type}`);
  if (f.queue) conds.push(Prisma.sql`queue = ${f.queue}`);
  if (f.q) conds.push(Prisma.sql`(input::text || ' ' || coalesce(error_message, '')) ILIKE ${likePattern(f.q)}`);
  if (f.from) conds.push(Prisma.sql`created_at >= ${new Date(f.from)}`);
  if (f.to) conds.push(Prisma.sql`created_at < ${new Date(f.to)}`);
  return conds;
}

/** The jobs with these ids, in the order of the ids. */
async function jobsInOrder(ids: string[]) {
  const rows = await db().job.findMany({ where: { id: { in: ids } } });
  const byId = new Map(rows.map((r) => [r.id, r]));
  return ids.flatMap((id) => byId.get(id) ?? []);
}

/** Jobs matching a filter, newest first, keyset-paged. Operators (own tenant), platform admins. */
export async function listOpsJobs(
  principal: Principal,
  raw: unknown,
): Promise<{ jobs: JobDto[]; nextCursor: string | null }> {
  const { cursor: rawCursor, limit, ...filter } = parseOrThrow(listOpsJobsSchema, raw);
  const cursor = rawCursor ? decodeCursor(rawCursor) : null;
  const conds = await filterConditions(principal, filter);
  if (cursor) conds.push(Prisma.sql`(created_at, id) < (${cursor.createdAt}, ${cursor.id}::uuid)`);
  const ids = await db().$queryRaw<{ id: string }[]>`
    SELECT id FROM jobs WHERE ${Prisma.join(conds, " AND ")}
    ORDER BY created_at DESC, id DESC LIMIT ${limit + 1}`;
  const rows = await jobsInOrder(ids.map((r) => r.id));
  const page = rows.slice(0, limit);
  const scopes = await pauseScopesFor(page);
  const last = page.at(-1);
  return {
    jobs: page.map((j) => ({ ...toJobDto(j, [], scopes), input: redactInput(j.type, j.input) })),
    nextCursor: rows.length > limit && last ? encodeCursor(last) : null,
  };
}

/** One job with its attempts (worker, duration, error class, message, stack), timeline, parts and audit entries. */
export async function getOpsJob(principal: Principal, rawId: string) {
  requireOperator(principal);
  const id = parseIdOr404(rawId, "Job not found");
  const job = await db().job.findFirst({
    where: { id, ...tenantScope(principal) },
    include: { ...historyInclude, files: true, children: { orderBy: { createdAt: "asc" }, take: 1000 } },
  });
  if (!job) throw notFound("Job not found");
  const [audit, scopes] = await Promise.all([
    db().auditLog.findMany({
      where: { targetIds: { has: id } },
      include: { actorUser: { select: { email: true } } },
      orderBy: { id: "asc" },
      take: 200,
    }),
    pauseScopesFor([job, ...job.children]),
  ]);
  return {
    job: { ...toJobDto(job, job.files, scopes), input: redactInput(job.type, job.input) },
    ...historyOf(job),
    parts: job.children.map((c) => toJobDto(c, [], scopes)),
    audit: audit.map((a) => ({
      id: a.id.toString(),
      at: a.createdAt.toISOString(),
      actor: a.actorUser?.email ?? null,
      action: a.action,
      details: a.details,
    })),
  };
}

export const jobActionSchema = z
  .object({
    action: z.enum(["cancel", "replay", "discard", "retry_now"], {
      error: "must be one of cancel, replay, discard, retry_now",
    }),
    ids: z.array(z.string().refine(isUuid, "must be a job id")).min(1).max(1000).optional(),
    filter: opsJobFilterSchema.optional(),
  })
  .strict()
  .refine((v) => Boolean(v.ids) !== Boolean(v.filter), { message: "give either ids or filter", path: ["ids"] });

const BULK_LIMIT = 10_000;

/**
 * A bulk action on ids or on everything a filter matches (at most 10,000):
 * cancel (waiting or running jobs), replay (failed or cancelled ones), discard
 * (failed ones leave the dead-letter queue), retry_now (a retrying job's backoff
 * is cut short). Jobs the action does not apply to are skipped. Answers how many
 * matched and how many were affected; one audit entry per call. Operators.
 */
export async function runJobAction(
  principal: Principal,
  body: unknown,
): Promise<{ action: string; matched: number; affected: number }> {
  const { action, ids, filter } = parseOrThrow(jobActionSchema, body);
  const conds = await filterConditions(principal, filter ?? {});
  if (ids) conds.push(Prisma.sql`id = ANY(${ids}::uuid[])`);
  const matchedIds = await db().$queryRaw<{ id: string }[]>`
    SELECT id FROM jobs WHERE ${Prisma.join(conds, " AND ")} ORDER BY created_at, id LIMIT ${BULK_LIMIT}`;
  const matched = await db().job.findMany({
    where: { id: { in: matchedIds.map((r) => r.id) } },
    select: { id: true, status: true, queue: true, discardedAt: true },
    orderBy: { createdAt: "asc" },
  });
  let affected = 0;
  const done: string[] = [];
  const attempt = async (id: string, fn: () => Promise<unknown>) => {
    try {
      await fn();
      affected++;
      done.push(id);
    } catch (err) {
      // Not applicable to this job (finished, not dead, raced): skipped, not fatal.
      if (!(err instanceof AppError && (err.code === "conflict" || err.code === "not_found"))) throw err;
    }
  };
  if (action === "cancel") {
    for (const j of matched) await attempt(j.id, () => cancelJob(principal, j.id));
  } else if (action === "replay") {
    for (const j of matched) await attempt(j.id, () => replayJob(principal, j.id));
  } else {
    const targets = matched.filter((j) =>
      action === "discard" ? j.status === "failed" && !j.discardedAt : j.status === "retrying",
    );
    const targetIds = targets.map((j) => j.id);
    const { count } =
      action === "discard"
        ? await db().job.updateMany({
            where: { id: { in: targetIds }, status: "failed", discardedAt: null },
            data: { discardedAt: new Date() },
          })
        : await db().job.updateMany({
            where: { id: { in: targetIds }, status: "retrying", admittedAt: null },
            data: { runAt: new Date() },
          });
    affected = count;
    done.push(...targetIds);
    if (action === "retry_now") for (const q of new Set(targets.map((t) => t.queue))) await admitQueue(q);
  }
  await recordAudit(principal, {
    action: `jobs.${action}`,
    targetType: "job",
    targetIds: done,
    tenantId: principal.isPlatformAdmin ? null : principal.tenantId,
    details: { filter: filter ?? null, ids: ids?.length ?? null, matched: matched.length, affected },
  });
  return { action, matched: matched.length, affected };
}
