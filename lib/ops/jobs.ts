/**
 * The operator console's jobs explorer: every job of the tenant (admins: of
 * every tenant) by status, type, queue, time and text; one job with its whole
 * story; and bulk actions on ids or on everything a filter matches.
 */
import { z } from "zod";
import { recordAuditPerTenant } from "../audit";
import { requireOperator, tenantScope } from "../auth/authorize";
import type { Principal } from "../auth/principal";
import { db, Prisma, type PrismaClient } from "../db";
import { AppError, notFound, parseOrThrow } from "../errors";
import { isUuid, parseIdOr404 } from "../ids";
import { admitQueue } from "../admission/admitter";
import { cancelJob, replayJob } from "../jobs/actions";
import { historyInclude, historyOf } from "../jobs/history";
import { pauseScopesFor } from "../jobs/pause-scopes";
import { queueNameSchema, sensitiveFields } from "../jobs/registry";
import { jobView } from "../jobs/view";
import type { JobDto } from "../jobs/dto";
import { decodeCursor, encodeCursor, jobStatuses } from "../jobs/queries";
import { withReadDb } from "../read-db";
import { isoInstant } from "../validation";
import { consoleTenant } from "./console";

/** A yes/no query flag: `1`/`0` (`true`/`false`, or a JSON boolean in a body). */
const flag = z
  .union([z.boolean(), z.enum(["1", "0", "true", "false"])], { error: "must be 1 or 0" })
  .transform((v) => v === true || v === "1" || v === "true");

const opsJobFilterFields = z
  .object({
    status: z.enum(jobStatuses, { error: `must be one of ${jobStatuses.join(", ")}` }).optional(),
    type: z.string().trim().min(1).max(100).optional(),
    queue: queueNameSchema().optional(),
    /** Platform admins: a tenant's id or slug. */
    tenant: z.string().trim().min(1).max(100).optional(),
    /** Searched in the input (as JSON text) and the error message. */
    q: z.string().trim().min(1).max(200).optional(),
    from: isoInstant.optional(),
    to: isoInstant.optional(),
    /** The class of the last error (`retryable`, `permanent`, `crashed`, `timeout`…). */
    errorClass: z.string().trim().min(1).max(50).optional(),
    /** A dead-letter group's fingerprint: the error message with ids and numbers masked. */
    fingerprint: z.string().min(1).max(500).optional(),
    /** Include child jobs (an export's parts); left out unless asked. */
    children: flag.optional(),
    /** Only jobs still in the dead-letter queue: failed, neither replayed nor discarded. */
    dead: flag.optional(),
  })
  .strict();

/** `to` after `from`: a range that ends before it starts is a mistake, not an empty answer. */
function fromBeforeTo(v: { from?: string; to?: string }, ctx: z.RefinementCtx): void {
  if (v.from && v.to && new Date(v.to) <= new Date(v.from)) {
    ctx.addIssue({ code: "custom", path: ["to"], message: "must be after from" });
  }
}

export const opsJobFilterSchema = opsJobFilterFields.superRefine(fromBeforeTo);

export type OpsJobFilter = z.infer<typeof opsJobFilterSchema>;

export const listOpsJobsSchema = opsJobFilterFields
  .extend({
    cursor: z.string().max(200).optional(),
    limit: z.coerce.number({ error: "must be a number" }).int().min(1).max(100).default(50),
  })
  .superRefine(fromBeforeTo);

/** `%`, `_` and `\\` in a search term match themselves. */
function likePattern(q: string): string {
  return `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/**
 * The patterns a search term matches: the term as typed and, when it looks like a piece of JSON,
 * the same spaced as Postgres prints an input (`"dataset": "events"`, `1, 2`), so that
 * `"dataset":"events"` finds what `"dataset": "events"` finds. The term as typed still matches as
 * it did (a comma in an error message stays as it is).
 */
function searchPatterns(q: string): string[] {
  const spaced = q.includes('"') ? q.replace(/"\s*:\s*/g, '": ').replace(/,\s*/g, ", ") : q;
  return spaced === q ? [likePattern(q)] : [likePattern(q), likePattern(spaced)];
}

/** `sql` ILIKE any of `patterns`, as ORs (the trigram index serves each; it cannot serve `ILIKE ANY`). */
function ilikeAny(sql: Prisma.Sql, patterns: string[]): Prisma.Sql {
  return Prisma.sql`(${Prisma.join(
    patterns.map((p) => Prisma.sql`${sql} ILIKE ${p}`),
    " OR ",
  )})`;
}

/**
 * A filter as SQL conditions, one query against the jobs indexes: tenant (or
 * none, for platform admins), status, type, queue, creation time, error class
 * and fingerprint (a dead-letter group), and text in the input or error, served
 * by the trigram index on `job_search` (a job's input and error as one text, kept
 * by triggers on `jobs`: an index on `jobs` itself took keys at every status
 * change). Child jobs are left out unless `children` is set.
 */
async function filterConditions(principal: Principal, f: OpsJobFilter): Promise<Prisma.Sql[]> {
  const tenantId = await consoleTenant(principal, f.tenant);
  const conds: Prisma.Sql[] = [Prisma.sql`true`];
  if (tenantId) conds.push(Prisma.sql`tenant_id = ${tenantId}::uuid`);
  if (f.status) conds.push(Prisma.sql`status = ${f.status}::job_status`);
  if (f.type) conds.push(Prisma.sql`type = ${f.type}`);
  if (f.queue) conds.push(Prisma.sql`queue = ${f.queue}`);
  if (f.q) {
    const patterns = searchPatterns(f.q);
    // The index narrows; the second test drops jobs that match only inside a field a task marks
    // sensitive, which would otherwise let a search guess a redacted secret piece by piece.
    conds.push(Prisma.sql`id IN (SELECT job_id FROM job_search WHERE ${ilikeAny(Prisma.sql`text`, patterns)})`);
    const hidden = sensitiveFields();
    if (hidden.length) {
      conds.push(
        ilikeAny(
          Prisma.sql`(conveyor_jsonb_strip_keys(input, ${hidden}::text[])::text || ' ' || coalesce(error_message, ''))`,
          patterns,
        ),
      );
    }
  }
  if (f.from) conds.push(Prisma.sql`created_at >= ${new Date(f.from)}`);
  if (f.to) conds.push(Prisma.sql`created_at < ${new Date(f.to)}`);
  if (f.errorClass) conds.push(Prisma.sql`error_class = ${f.errorClass}`);
  if (f.fingerprint) conds.push(Prisma.sql`error_fingerprint = ${f.fingerprint}`);
  // The dead-letter queue's own condition, word for word: with type, error class and
  // fingerprint it is served by the partial index `jobs_dead_letters_idx`.
  if (f.dead) conds.push(Prisma.sql`status = 'failed' AND discarded_at IS NULL`);
  // A part is shown with its parent (the job page's parts grid), not as a job of its own,
  // unless asked: the same index scans as before, each row tested.
  if (!f.children) conds.push(Prisma.sql`parent_id IS NULL`);
  return conds;
}

/** The jobs with these ids, in the order of the ids, with who asked for each (`requestedBy`). */
async function jobsInOrder(ids: string[], from: PrismaClient) {
  const rows = await from.job.findMany({
    where: { id: { in: ids } },
    include: { createdBy: { select: { email: true } } },
  });
  const byId = new Map(rows.map((r) => [r.id, r]));
  return ids.flatMap((id) => byId.get(id) ?? []);
}

/**
 * Jobs matching a filter, newest first, keyset-paged. Operators (own tenant), platform admins. Read
 * from the replica when it is fit (lib/read-db.ts); the active pauses a waiting job shows come from
 * the primary (a small table, and the one an operator just changed).
 */
export async function listOpsJobs(
  principal: Principal,
  raw: unknown,
): Promise<{ jobs: JobDto[]; nextCursor: string | null; tenants: Record<string, string> }> {
  const { cursor: rawCursor, limit, ...filter } = parseOrThrow(listOpsJobsSchema, raw);
  const cursor = rawCursor ? decodeCursor(rawCursor) : null;
  const conds = await filterConditions(principal, filter);
  if (cursor) conds.push(Prisma.sql`(created_at, id) < (${cursor.createdAt}, ${cursor.id}::uuid)`);
  const { rows, page, tenants } = await withReadDb(principal, async (rdb) => {
    const ids = await rdb.$queryRaw<{ id: string }[]>`
      SELECT id FROM jobs WHERE ${Prisma.join(conds, " AND ")}
      ORDER BY created_at DESC, id DESC LIMIT ${limit + 1}`;
    const rows = await jobsInOrder(
      ids.map((r) => r.id),
      rdb,
    );
    const page = rows.slice(0, limit);
    const tenants = await rdb.tenant.findMany({
      where: { id: { in: [...new Set(page.map((j) => j.tenantId))] } },
      select: { id: true, slug: true },
    });
    return { rows, page, tenants };
  });
  const scopes = await pauseScopesFor(page);
  const last = page.at(-1);
  return {
    jobs: page.map((j) => jobView(j, [], scopes)),
    nextCursor: rows.length > limit && last ? encodeCursor(last) : null,
    /** The slug of each tenant on the page, by id. */
    tenants: Object.fromEntries(tenants.map((t) => [t.id, t.slug])),
  };
}

/** One job with its attempts (worker, duration, error class, message, stack), timeline, parts and audit entries. */
export async function getOpsJob(principal: Principal, rawId: string) {
  requireOperator(principal);
  const id = parseIdOr404(rawId, "Job not found");
  const job = await db().job.findFirst({
    where: { id, ...tenantScope(principal) },
    include: {
      ...historyInclude,
      files: true,
      cancelRequestedBy: { select: { email: true } },
      scheduleRun: true,
      children: { orderBy: [{ childIndex: "asc" }, { createdAt: "asc" }], take: 1000 },
    },
  });
  if (!job) throw notFound("Job not found");
  const [audit, scopes] = await Promise.all([
    db().auditLog.findMany({
      // The job's own tenant's entries, and platform admins' (recorded without a tenant);
      // never another tenant's, whose filter or replayed ids would leak.
      // A replay also shows the action that made it (recorded on the job it replays).
      where: {
        AND: [
          { OR: [{ tenantId: job.tenantId }, { tenantId: null }] },
          {
            OR: [
              { targetIds: { has: id } },
              ...(job.replayOfId
                ? [
                    {
                      targetIds: { has: job.replayOfId },
                      action: { in: ["job.replay", "jobs.replay", "dead_letters.replay"] },
                    },
                  ]
                : []),
            ],
          },
        ],
      },
      include: { actorUser: { select: { email: true } } },
      orderBy: { id: "asc" },
      take: 200,
    }),
    pauseScopesFor([job, ...job.children]),
  ]);
  return {
    job: jobView(job, job.files, scopes),
    ...historyOf(job),
    parts: job.children.map((c) => jobView(c, [], scopes)),
    audit: audit.map((a) => ({
      id: a.id.toString(),
      at: a.createdAt.toISOString(),
      actor: a.actorUser?.email ?? null,
      action: a.action,
      // A platform admin's entry may span tenants: its details are for admins.
      details: a.tenantId === null && !principal.isPlatformAdmin ? null : a.details,
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
    /** Only count: how many match and how many the action applies to, and their ids. Nothing changes. */
    dryRun: z.boolean({ error: "must be true or false" }).default(false),
  })
  .strict()
  .refine((v) => Boolean(v.ids) || Boolean(v.filter), { message: "give ids, a filter, or both", path: ["ids"] });

type JobAction = z.infer<typeof jobActionSchema>["action"];

/** The jobs an action applies to (the others are skipped). */
const APPLIES: Record<JobAction, Prisma.Sql> = {
  cancel: Prisma.sql`status IN ('scheduled', 'queued', 'running', 'retrying')`,
  replay: Prisma.sql`status IN ('failed', 'cancelled') AND discarded_at IS NULL AND parent_id IS NULL
                     AND NOT EXISTS (SELECT 1 FROM jobs r WHERE r.replay_of_id = jobs.id)`,
  discard: Prisma.sql`status = 'failed' AND discarded_at IS NULL`,
  retry_now: Prisma.sql`status = 'retrying' AND admitted_at IS NULL`,
};

const BULK_LIMIT = 10_000;

export type JobActionPlan = {
  action: string;
  dryRun: true;
  /** Jobs the ids and filter match (counted up to 10,000). */
  matched: number;
  /** More than 10,000 match. */
  moreThanLimit: boolean;
  /** Of those, the jobs the action applies to: the oldest 10,000 (the ones a run without dryRun acts on). */
  applicable: number;
  ids: string[];
};

/**
 * A bulk action on ids, on everything a filter matches, or on ids that also
 * match a filter: cancel (waiting or running jobs), replay (failed or cancelled
 * ones), discard (failed ones leave the dead-letter queue), retry_now (a
 * retrying job's backoff is cut short). It acts on the oldest 10,000 matching
 * jobs it applies to; the others are skipped. Answers how many matched and how many were affected;
 * one audit entry per call, with the filter. `dryRun` changes nothing and
 * answers how many match, which ids the action applies to, so a client can
 * confirm the count and then act in chunks of ids (with the filter) to show
 * progress. Operators.
 */
async function actionScope(principal: Principal, body: unknown) {
  const parsed = parseOrThrow(jobActionSchema, body);
  const conds = await filterConditions(principal, parsed.filter ?? {});
  if (parsed.ids) conds.push(Prisma.sql`id = ANY(${parsed.ids}::uuid[])`);
  return { ...parsed, where: Prisma.join(conds, " AND ") };
}

/** How many jobs match, counted up to one past the limit. */
async function countMatches(where: Prisma.Sql): Promise<number> {
  const [row] = await db().$queryRaw<{ n: bigint }[]>`
    SELECT count(*) AS n FROM (SELECT 1 FROM jobs WHERE ${where} LIMIT ${BULK_LIMIT + 1}) m`;
  return Number(row?.n ?? 0);
}

/** The dry run of a bulk action (see runJobAction): how many match, which ids it applies to. Changes nothing. */
export async function planJobAction(principal: Principal, body: unknown): Promise<JobActionPlan> {
  const { action, where } = await actionScope(principal, body);
  const [matched, applicable] = await Promise.all([
    countMatches(where),
    db().$queryRaw<{ id: string }[]>`
      SELECT id FROM jobs WHERE ${where} AND ${APPLIES[action]} ORDER BY created_at, id LIMIT ${BULK_LIMIT}`,
  ]);
  return {
    action,
    dryRun: true,
    matched: Math.min(matched, BULK_LIMIT),
    moreThanLimit: matched > BULK_LIMIT,
    applicable: applicable.length,
    ids: applicable.map((r) => r.id),
  };
}

export async function runJobAction(
  principal: Principal,
  body: unknown,
): Promise<{ action: string; matched: number; affected: number }> {
  const { action, ids, filter, where, dryRun } = await actionScope(principal, body);
  if (dryRun) throw new AppError("invalid_input", "Invalid input: dryRun: a dry run is planJobAction's", []);
  // The same selection as the dry run: what matches, and of it the oldest 10,000 the action applies to.
  const [counted, targets] = await Promise.all([
    countMatches(where),
    db().$queryRaw<{ id: string; queue: string; tenantId: string }[]>`
      SELECT id, queue, tenant_id AS "tenantId" FROM jobs WHERE ${where} AND ${APPLIES[action]}
      ORDER BY created_at, id LIMIT ${BULK_LIMIT}`,
  ]);
  const matched = Math.min(counted, BULK_LIMIT);
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
    for (const j of targets) await attempt(j.id, () => cancelJob(principal, j.id));
  } else if (action === "replay") {
    for (const j of targets) await attempt(j.id, () => replayJob(principal, j.id));
  } else {
    const targetIds = targets.map((j) => j.id);
    const count =
      action === "discard"
        ? await db().$executeRaw`
            UPDATE jobs SET discarded_at = now(), updated_at = now()
            WHERE id = ANY(${targetIds}::uuid[]) AND status = 'failed' AND discarded_at IS NULL`
        : await db().$executeRaw`
            UPDATE jobs SET run_at = now(), updated_at = now()
            WHERE id = ANY(${targetIds}::uuid[]) AND status = 'retrying' AND admitted_at IS NULL`;
    affected = count;
    done.push(...targetIds);
    if (action === "retry_now") for (const q of new Set(targets.map((t) => t.queue))) await admitQueue(q);
  }
  // One entry per tenant touched (a platform admin's action may span tenants), each under that tenant.
  const acted = new Set(done);
  await recordAuditPerTenant(
    principal,
    {
      action: `jobs.${action}`,
      targetType: "job",
      details: { filter: filter ?? null, ids: ids?.length ?? null, matched, affected },
    },
    targets.filter((t) => acted.has(t.id)),
  );
  return { action, matched, affected };
}
