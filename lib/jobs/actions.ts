/**
 * What people do to one job: cancel it, replay it. Every action is scoped by
 * the principal's tenant (another tenant's job is not found) and audited.
 */
import { z } from "zod";
import { recordAudit } from "../audit";
import { requireOperator, tenantScope } from "../auth/authorize";
import type { Principal } from "../auth/principal";
import { db, Prisma } from "../db";
import { AppError, notFound, parseOrThrow } from "../errors";
import type { JobModel } from "../generated/prisma/models";
import { parseIdOr404 } from "../ids";
import { currentTraceCarrier } from "../tracing";
import { isTerminal, type JobDto } from "./dto";
import { pauseScopesFor } from "./pause-scopes";
import { getTaskDefinition } from "./registry";
import { requestCancel } from "./transitions";
import { jobView } from "./view";

type Tx = Prisma.TransactionClient;

/** Locks a job the principal may see (404 otherwise) and reads it. */
export async function lockJob(tx: Tx, principal: Principal, id: string): Promise<JobModel> {
  const scope = tenantScope(principal);
  const rows = await tx.$queryRaw<{ id: string }[]>`
    SELECT id FROM jobs WHERE id = ${id}::uuid
      AND (${scope.tenantId ?? null}::uuid IS NULL OR tenant_id = ${scope.tenantId ?? null}::uuid)
    FOR UPDATE`;
  if (!rows[0]) throw notFound("Job not found");
  return tx.job.findUniqueOrThrow({ where: { id } });
}

export const cancelBodySchema = z
  .object({ reason: z.string().trim().min(1, "must not be empty").max(500, "must be at most 500 characters") })
  .partial()
  .strict();

/**
 * Cancels a job (the one cancel: lib/jobs/transitions.ts). Waiting: cancelled
 * at once, its dispatch removed, it never starts. Running: a cancel request (who, why) that reaches its worker through
 * NOTIFY; the attempt aborts and the job ends `cancelled`. A job waiting for
 * its children runs nowhere: the database ends it at once (trigger
 * jobs_cancel_waiting). Finished: 409. Members may cancel their own tenant's jobs.
 */
export async function cancelJob(principal: Principal, rawId: string, body: unknown = {}): Promise<JobDto> {
  const id = parseIdOr404(rawId, "Job not found");
  const { reason } = parseOrThrow(cancelBodySchema, body ?? {});
  const updated = await db().$transaction(async (tx) => {
    const job = await lockJob(tx, principal, id);
    if (isTerminal(job.status)) throw new AppError("conflict", `The job is already ${job.status}`);
    await requestCancel(tx, [id], reason ?? null, {
      by: principal.userId,
      fallbackMessage: `Cancelled by ${principal.email}`,
    });
    await recordAudit(
      principal,
      {
        action: "job.cancel",
        targetType: "job",
        targetIds: [id],
        tenantId: job.tenantId,
        details: { status: job.status, ...(reason ? { reason } : {}) },
      },
      tx,
    );
    // Read back as the triggers left it, before the commit lets a worker move it on.
    return tx.job.findUniqueOrThrow({ where: { id }, include: { cancelRequestedBy: { select: { email: true } } } });
  });
  return jobView(updated);
}

/**
 * The replay of a dead job; the original leaves the dead-letter queue (its
 * history stays). Null when the original already left it (replayed or
 * discarded, perhaps by a concurrent request): a dead job is replayed once.
 */
export async function replayOne(tx: Tx, principal: Principal, original: JobModel): Promise<JobModel | null> {
  const taken = await tx.$executeRaw`
    UPDATE jobs SET discarded_at = now() WHERE id = ${original.id}::uuid AND discarded_at IS NULL`;
  if (taken === 0) return null;
  // A pipeline starts again at its failed stage, keeping what the stages before it made.
  const checkpoint = getTaskDefinition(original.type)?.replayCheckpoint?.(original.checkpoint) ?? null;
  const trace = currentTraceCarrier();
  return tx.job.create({
    data: {
      tenantId: original.tenantId,
      type: original.type,
      // Replays are bulk work: a batch of them never delays a user's own request. Work of
      // another queue with its own pool (webhook deliveries) stays there.
      queue: original.queue === "interactive" ? "bulk" : original.queue,
      priority: original.priority,
      status: "queued",
      input: original.input as Prisma.InputJsonValue,
      inputHash: original.inputHash,
      maxAttempts: original.maxAttempts,
      createdById: principal.userId,
      parentId: original.parentId,
      replayOfId: original.id,
      ...(checkpoint === null ? {} : { checkpoint: checkpoint as Prisma.InputJsonValue }),
      // The replay's attempts continue the trace of the request that asked for it (lib/tracing.ts).
      ...(trace ? { traceContext: trace } : {}),
    },
  });
}

const DEAD: JobModel["status"][] = ["failed", "cancelled"];

/**
 * Replays a dead (failed or cancelled) job as a new job with a fresh budget, linked to the
 * original. A dead child (an export's part, a pipeline's stage) is replayed through the job it
 * is part of, once that has ended dead: its task's `replayCheckpoint` decides what runs again
 * (a split export reruns only its dead parts and adopts the finished ones). Operators.
 */
export async function replayJob(principal: Principal, rawId: string): Promise<JobDto> {
  requireOperator(principal);
  const id = parseIdOr404(rawId, "Job not found");
  const replay = await db().$transaction(async (tx) => {
    let original = await lockJob(tx, principal, id);
    if (!DEAD.includes(original.status)) {
      throw new AppError("conflict", `Only failed or cancelled jobs can be replayed; this one is ${original.status}`);
    }
    const via = original.parentId ? original.id : null;
    while (original.parentId) {
      // Child, then parent: the order the children's trigger locks them in.
      const parent = await lockJob(tx, principal, original.parentId);
      if (!DEAD.includes(parent.status)) {
        // Still gathering its children (or it succeeded): a replay now would change nothing it has.
        throw new AppError(
          "conflict",
          `This job is a part of ${parent.id} (${parent.type}), which is ${parent.status}: it can be replayed once that has failed`,
        );
      }
      original = parent;
    }
    const replay = await replayOne(tx, principal, original);
    if (!replay) throw new AppError("conflict", "This job was already replayed or discarded");
    await recordAudit(
      principal,
      {
        action: "job.replay",
        targetType: "job",
        targetIds: via ? [original.id, via] : [original.id],
        tenantId: original.tenantId,
        details: { replayId: replay.id, ...(via ? { via } : {}) },
      },
      tx,
    );
    return replay;
  });
  return jobView(replay, [], await pauseScopesFor([replay]));
}
