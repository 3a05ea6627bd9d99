/**
 * A job's story: its attempts (each run, with worker, outcome and error) and
 * its status timeline. 404 for another tenant's job.
 */
import { isOperator, tenantScope } from "../auth/authorize";
import type { Principal } from "../auth/principal";
import { db, type Prisma } from "../db";
import { notFound } from "../errors";
import { parseIdOr404 } from "../ids";

export type AttemptDto = {
  attempt: number;
  /** 0 for the attempt's first run; 1, 2… for its runs after waiting for child jobs. */
  resume: number;
  /** The worker (host:pid) that ran it; operators only (null for members). */
  workerId: string | null;
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
  const history = historyOf(job);
  return isOperator(principal) ? history : forMembers(history);
}

/** What members see of a history: no stack traces, no worker hosts (operators and platform admins do). */
export function forMembers(history: JobHistory): JobHistory {
  return {
    ...history,
    attempts: history.attempts.map((a) => ({
      ...a,
      workerId: null,
      error: a.error ? { ...a.error, stack: null } : null,
    })),
  };
}

/** What a job's history query includes: attempts and transitions, oldest first. */
export const historyInclude = {
  attemptsHistory: { orderBy: [{ attempt: "asc" }, { resume: "asc" }] },
  transitions: { orderBy: { id: "asc" } },
} satisfies Prisma.JobInclude;

/** A job's attempts and timeline, from a row loaded with `historyInclude`. */
export function historyOf(job: Prisma.JobGetPayload<{ include: typeof historyInclude }>): JobHistory {
  return {
    attempts: job.attemptsHistory.map((a) => ({
      attempt: a.attempt,
      resume: a.resume,
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
