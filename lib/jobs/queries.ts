/**
 * Reading jobs, always through a principal: another tenant's job is not found.
 */
import { z } from "zod";
import { tenantScope } from "../auth/authorize";
import type { Principal } from "../auth/principal";
import { db, pool, prepared } from "../db";
import { AppError, notFound, parseOrThrow } from "../errors";
import { isUuid, parseIdOr404 } from "../ids";
import { isoInstant } from "../validation";
import { ownedJobConditions, sensitiveFields } from "./registry";
import type { JobDto, JobRelations } from "./dto";
import { pauseScopesFor } from "./pause-scopes";
import { jobView } from "./view";
import { filesFromJson, jobColumns, jobFilesJson, jobFromRow, type FileJson, type JobRow } from "./sql/job-row";

export const jobStatuses = [
  "scheduled",
  "queued",
  "running",
  "retrying",
  "succeeded",
  "failed",
  "cancelled",
  "expired",
] as const;

/** What made a job: a person or a program (`manual`), or a schedule's occurrence (`schedule`). */
export const jobSources = ["manual", "schedule"] as const;

export const listJobsQuerySchema = z
  .object({
    status: z.enum(jobStatuses, { error: `must be one of ${jobStatuses.join(", ")}` }).optional(),
    /** A type, or several separated by commas (a kind's types). */
    type: z
      .string()
      .max(1000)
      .regex(/^[\w.:-]{1,100}(,[\w.:-]{1,100}){0,49}$/, "must be a job type, or up to 50 separated by commas")
      .optional(),
    source: z.enum(jobSources, { error: `must be one of ${jobSources.join(", ")}` }).optional(),
    /** A schedule's id: only its runs (the exports page's "from a schedule" filter). */
    schedule: z.uuid({ error: "must be a schedule's id" }).optional(),
    /**
     * `field:value`: only jobs whose input has that top-level field with that text value
     * (`dataset:customers`). A field a task marks sensitive cannot be searched.
     */
    input: z
      .string()
      .max(300)
      .regex(/^[A-Za-z_]\w{0,49}:.{1,200}$/, "must be field:value (a top-level input field, then its value)")
      .refine((v) => !sensitiveFields().includes(v.slice(0, v.indexOf(":"))), "cannot search a sensitive field")
      .optional(),
    /** Created at or after this instant. */
    from: isoInstant.optional(),
    /** Created before this instant. */
    to: isoInstant.optional(),
    /** `1`: only jobs of no parent (an export, not its parts; an import, not its stages). */
    roots: z.enum(["0", "1"], { error: "must be 0 or 1" }).optional(),
    /** `1`: only the caller's own jobs (the My jobs page asks for it). */
    mine: z.enum(["0", "1"], { error: "must be 0 or 1" }).optional(),
    cursor: z.string().max(200).optional(),
    limit: z.coerce.number({ error: "must be a number" }).int().min(1).max(100).default(20),
  })
  .superRefine((v, ctx) => {
    if (v.from && v.to && new Date(v.to) <= new Date(v.from)) {
      ctx.addIssue({ code: "custom", path: ["to"], message: "must be after from" });
    }
  });

export type ListJobsQuery = z.infer<typeof listJobsQuerySchema>;

type Cursor = { createdAt: Date; id: string };

export function encodeCursor(c: Cursor): string {
  return Buffer.from(`${c.createdAt.toISOString()}|${c.id}`).toString("base64url");
}

const MIN_TIME = Date.UTC(1970, 0, 1);
const MAX_TIME = Date.UTC(9999, 11, 31);

export function decodeCursor(raw: string): Cursor {
  const [at, id] = Buffer.from(raw, "base64url").toString().split("|");
  const createdAt = new Date(at ?? "");
  const t = createdAt.getTime();
  if (!id || !isUuid(id) || Number.isNaN(t) || t < MIN_TIME || t > MAX_TIME) {
    throw new AppError("invalid_input", "Invalid input: cursor: not a cursor from a previous page", [
      { path: "cursor", message: "not a cursor from a previous page" },
    ]);
  }
  return { createdAt, id };
}

type ReadRow = JobRow & {
  files: FileJson[];
  createdByEmail: string | null;
  cancelledByEmail: string | null;
  scheduleRun: { scheduleId: string | null; scheduledFor: string } | null;
};

/**
 * Jobs with their files and who asked for them and for their cancel, in SQL (lib/jobs/sql/job-row.ts):
 * `where` and `tail` over `jobs j`, `$1` the principal's tenant (null: every tenant, a platform admin).
 */
async function readJobs(
  principal: Principal,
  where: string,
  tail: string,
  values: unknown[],
  { prepare = false }: { prepare?: boolean } = {},
) {
  // Only a lookup by id is prepared (lib/db.ts): a list's kept generic plan, made without knowing the
  // tenant, the status or the limit, may sort a large tenant's whole history where a plan for the
  // values walks an index and stops.
  const text = `SELECT ${jobColumns("j.")}, ${jobFilesJson("j")} AS files,
            (SELECT u.email FROM users u WHERE u.id = j.created_by_id) AS "createdByEmail",
            (SELECT u.email FROM users u WHERE u.id = j.cancel_requested_by_id) AS "cancelledByEmail",
            (SELECT json_build_object('scheduleId', r.schedule_id, 'scheduledFor', r.scheduled_for)
               FROM schedule_runs r WHERE r.job_id = j.id) AS "scheduleRun"
       FROM jobs j
      WHERE ${principal.isPlatformAdmin ? "$1::uuid IS NULL" : "j.tenant_id = $1::uuid"} AND ${where}
      ${tail}`;
  const { rows } = await pool().query<ReadRow>({
    ...(prepare ? prepared(text) : { text }),
    values: [tenantScope(principal).tenantId ?? null, ...values],
  });
  return rows.map(({ files, createdByEmail, cancelledByEmail, scheduleRun, ...row }) => ({
    job: {
      ...jobFromRow(row),
      createdBy: createdByEmail === null ? null : { email: createdByEmail },
      cancelRequestedBy: cancelledByEmail === null ? null : { email: cancelledByEmail },
      scheduleRun: scheduleRun && { ...scheduleRun, scheduledFor: new Date(scheduleRun.scheduledFor) },
    },
    files: filesFromJson(files),
  }));
}

/** One job the principal may see, with its files; 404 otherwise. */
export async function getJob(principal: Principal, rawId: string): Promise<JobDto> {
  const id = parseIdOr404(rawId, "Job not found");
  const [found] = await readJobs(principal, "j.id = $2::uuid", "", [id], { prepare: true });
  if (!found) throw notFound("Job not found");
  return jobView(found.job, found.files, await pauseScopesFor([found.job]));
}

/** The relations of a job the principal may see (each in the same tenant scope); 404 otherwise. */
export async function getJobRelations(principal: Principal, rawId: string): Promise<JobRelations> {
  const id = parseIdOr404(rawId, "Job not found");
  const job = await db().job.findFirst({
    where: { id, ...tenantScope(principal) },
    select: { parentId: true, replayOfId: true },
  });
  if (!job) throw notFound("Job not found");
  const scope = tenantScope(principal);
  const [parent, replayOf, replays] = await Promise.all([
    job.parentId ? db().job.findFirst({ where: { id: job.parentId, ...scope } }) : null,
    job.replayOfId ? db().job.findFirst({ where: { id: job.replayOfId, ...scope } }) : null,
    db().job.findMany({
      where: { replayOfId: id, ...scope },
      orderBy: [{ createdAt: "asc" }, { id: "asc" }],
      take: 20,
      include: { createdBy: { select: { email: true } } },
    }),
  ]);
  return {
    parent: parent ? jobView(parent) : null,
    replayOf: replayOf ? jobView(replayOf) : null,
    replays: replays.map((r) => jobView(r)),
  };
}

/**
 * The jobs of the principal's tenant (every tenant for a platform admin) that
 * may have changed since `since`: the unfinished ones and those finished since,
 * oldest first, at most 1,000 (`complete` false when there were more).
 */
export async function jobsChangedSince(
  principal: Principal,
  since: Date,
): Promise<{ jobs: JobDto[]; complete: boolean }> {
  // Two indexed lookups rather than one OR the planner may answer by scanning the tenant's history.
  const [open, finished] = await Promise.all([
    db().job.findMany({
      where: { ...tenantScope(principal), status: { in: ["scheduled", "queued", "running", "retrying"] } },
      orderBy: [{ createdAt: "asc" }, { id: "asc" }],
      take: 1_001,
    }),
    db().job.findMany({
      where: { ...tenantScope(principal), finishedAt: { gte: since } },
      orderBy: { finishedAt: "asc" },
      take: 1_001,
    }),
  ]);
  const byId = new Map([...open, ...finished].map((j) => [j.id, j]));
  const rows = [...byId.values()].sort(
    (a, b) => a.createdAt.getTime() - b.createdAt.getTime() || a.id.localeCompare(b.id),
  );
  const page = rows.slice(0, 1_000);
  const scopes = await pauseScopesFor(page);
  return { jobs: page.map((j) => jobView(j, [], scopes)), complete: rows.length <= 1_000 };
}

/** A job's child jobs (an export's parts), in their order in the fan-out. 404 for another tenant's job. */
export async function getJobParts(principal: Principal, rawId: string): Promise<JobDto[]> {
  const id = parseIdOr404(rawId, "Job not found");
  const job = await db().job.findFirst({ where: { id, ...tenantScope(principal) }, select: { id: true } });
  if (!job) throw notFound("Job not found");
  const parts = await db().job.findMany({
    where: { parentId: id },
    orderBy: [{ childIndex: "asc" }, { createdAt: "asc" }, { id: "asc" }],
  });
  const scopes = await pauseScopesFor(parts);
  return parts.map((p) => jobView(p, [], scopes));
}

/**
 * The jobs a principal lists, newest first, with keyset pagination: a member's own (those they
 * created, their schedules' runs, and what a workload says they own: `ownedJobConditions`), an
 * operator's tenant's (their own with `mine=1`), a platform admin's every tenant's. Filters:
 * status, type, source (manual or schedule), one schedule's runs, an input field's value, created
 * range, roots only.
 */
export async function listJobs(
  principal: Principal,
  rawQuery: unknown,
): Promise<{ jobs: JobDto[]; nextCursor: string | null }> {
  const q = parseOrThrow(listJobsQuerySchema, rawQuery);
  const cursor = q.cursor ? decodeCursor(q.cursor) : null;
  const where = ["true"];
  const values: unknown[] = [];
  const param = (v: unknown) => `$${values.push(v) + 1}`;
  if (q.mine === "1") {
    const user = `${param(principal.userId)}::uuid`;
    where.push(
      `(j.created_by_id = ${user}${ownedJobConditions(user)
        .map((c) => ` OR ${c}`)
        .join("")})`,
    );
  }
  if (q.status) where.push(`j.status = ${param(q.status)}::job_status`);
  const types = q.type?.split(",") ?? [];
  // One type is an equality (as it was before kinds asked for several); several, ANY.
  if (types.length === 1) where.push(`j.type = ${param(types[0])}`);
  if (types.length > 1) where.push(`j.type = ANY(${param(types)}::text[])`);
  if (q.source) {
    where.push(`${q.source === "schedule" ? "" : "NOT "}EXISTS (SELECT 1 FROM schedule_runs r WHERE r.job_id = j.id)`);
  }
  if (q.schedule) {
    where.push(
      `EXISTS (SELECT 1 FROM schedule_runs r WHERE r.job_id = j.id AND r.schedule_id = ${param(q.schedule)}::uuid)`,
    );
  }
  if (q.input) {
    const at = q.input.indexOf(":");
    where.push(`j.input->>${param(q.input.slice(0, at))} = ${param(q.input.slice(at + 1))}`);
  }
  if (q.from) where.push(`j.created_at >= ${param(new Date(q.from))}::timestamptz`);
  if (q.to) where.push(`j.created_at < ${param(new Date(q.to))}::timestamptz`);
  if (q.roots === "1") where.push("j.parent_id IS NULL");
  if (cursor) where.push(`(j.created_at, j.id) < (${param(cursor.createdAt)}::timestamptz, ${param(cursor.id)}::uuid)`);
  const rows = await readJobs(
    principal,
    where.join(" AND "),
    `ORDER BY j.created_at DESC, j.id DESC LIMIT ${param(q.limit + 1)}`,
    values,
  );
  const page = rows.slice(0, q.limit);
  const last = page[page.length - 1];
  const scopes = await pauseScopesFor(page.map((r) => r.job));
  return {
    jobs: page.map((r) => jobView(r.job, r.files, scopes)),
    nextCursor: rows.length > q.limit && last ? encodeCursor(last.job) : null,
  };
}
