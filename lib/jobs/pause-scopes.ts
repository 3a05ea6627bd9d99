/**
 * The active pauses' scopes, for telling a paused job from one waiting its turn.
 */
import { db } from "../db";
import type { JobLike, PauseScope } from "./admission-state";

/** The scopes of every active pause (a small table). */
export async function activePauseScopes(): Promise<PauseScope[]> {
  return db().queuePause.findMany({
    where: { resumedAt: null },
    select: { queue: true, type: true, tenantId: true },
  });
}

/** The pause scopes, loaded only when some of `jobs` waits unadmitted. */
export async function pauseScopesFor(jobs: JobLike[]): Promise<PauseScope[]> {
  const needed = jobs.some((j) => (j.status === "queued" || j.status === "retrying") && !j.admittedAt);
  return needed ? activePauseScopes() : [];
}
