/**
 * Creating jobs: our row and its graphile-worker job in one transaction, so
 * no job is recorded but never queued, nor queued but never recorded.
 */
import { createHash } from "node:crypto";
import { db, Prisma } from "../db";
import { AppError, parseOrThrow } from "../errors";
import type { JobModel } from "../generated/prisma/models";
import { getTaskDefinition } from "./catalog";

type Tx = Prisma.TransactionClient;

export type EnqueueOptions = {
  tenantId: string;
  type: string;
  input: unknown;
  createdById?: string | null;
  /** Same key and same input: the same job. Same key, other input: 409. */
  idempotencyKey?: string | null;
  /** lower runs first */
  priority?: number;
  runAt?: Date;
  parentId?: string | null;
  /** Overrides the task's retry budget. */
  maxAttempts?: number;
};

export type EnqueueResult = { job: JobModel; created: boolean };

/** JSON with sorted keys, so equal inputs hash equally whatever their key order. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

function hashInput(type: string, input: unknown): string {
  return createHash("sha256").update(canonicalJson({ type, input })).digest("hex");
}

/**
 * Adds the graphile-worker job that dispatches `jobId`, inside `tx`. It carries
 * only our job id; graphile's own retries are off (max_attempts 1) because
 * Conveyor schedules retries itself. The job key is our id: adding it again
 * (a retry, a reaped lease) replaces a pending dispatch, or, while the old one
 * is locked by a running or dead worker, creates a fresh one beside it; and
 * cancel can remove it with `remove_job`.
 */
export async function dispatchJob(
  tx: Tx,
  job: { id: string; type: string; priority: number; runAt: Date },
): Promise<void> {
  await tx.$executeRaw`SELECT graphile_worker.add_job(
    ${job.type}::text,
    json_build_object('jobId', ${job.id}::text),
    run_at => ${job.runAt}::timestamptz,
    max_attempts => 1,
    job_key => ${job.id}::text,
    priority => ${job.priority}::int
  )`;
}

async function findByIdempotencyKey(tenantId: string, key: string, inputHash: string): Promise<JobModel | null> {
  const existing = await db().job.findUnique({ where: { tenantId_idempotencyKey: { tenantId, idempotencyKey: key } } });
  if (existing && existing.inputHash !== inputHash) {
    throw new AppError("conflict", "Idempotency-Key was already used with a different request body");
  }
  return existing;
}

/** Validates the input against the task's schema and creates the job (or returns the idempotent original). */
export async function enqueueJob(opts: EnqueueOptions): Promise<EnqueueResult> {
  const def = getTaskDefinition(opts.type);
  if (!def)
    throw new AppError("invalid_input", `Unknown job type: ${opts.type}`, [
      { path: "type", message: "unknown job type" },
    ]);
  const input = parseOrThrow(def.inputSchema, opts.input);
  const inputHash = hashInput(opts.type, input);
  const key = opts.idempotencyKey ?? null;

  if (key) {
    const existing = await findByIdempotencyKey(opts.tenantId, key, inputHash);
    if (existing) return { job: existing, created: false };
  }

  try {
    const job = await db().$transaction(async (tx) => {
      const row = await tx.job.create({
        data: {
          tenantId: opts.tenantId,
          type: opts.type,
          queue: def.queue,
          priority: opts.priority ?? 0,
          status: "queued",
          input: input as Prisma.InputJsonValue,
          inputHash,
          idempotencyKey: key,
          maxAttempts: opts.maxAttempts ?? def.retry.maxAttempts,
          createdById: opts.createdById ?? null,
          parentId: opts.parentId ?? null,
          runAt: opts.runAt ?? new Date(),
        },
      });
      await dispatchJob(tx, row);
      return row;
    });
    return { job, created: true };
  } catch (err) {
    // A concurrent request with the same key won the race: answer with its job.
    if (key && err instanceof Prisma.PrismaClientKnownRequestError && err.code === "P2002") {
      const existing = await findByIdempotencyKey(opts.tenantId, key, inputHash);
      if (existing) return { job: existing, created: false };
    }
    throw err;
  }
}
