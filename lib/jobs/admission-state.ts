/**
 * Where a waiting job stands in admission, for people: admitted (about to
 * start), waiting (its tenant is at its cap, or it awaits its turn), or paused.
 * Pure: the browser bundle uses it too (lib/jobs/dto.ts). Admission itself
 * (lib/admission) decides; this only reads what it decided.
 */
export type Admission = "admitted" | "waiting" | "paused";

export type PauseScope = { queue: string | null; type: string | null; tenantId: string | null };

export type JobLike = { status: string; queue: string; type: string; tenantId: string; admittedAt: Date | null };

/** Same rule as SQL's conveyor_paused: a null field of a pause matches everything. */
export function pausedBy(scopes: PauseScope[], job: Pick<JobLike, "queue" | "type" | "tenantId">): boolean {
  return scopes.some(
    (p) =>
      (p.queue === null || p.queue === job.queue) &&
      (p.type === null || p.type === job.type) &&
      (p.tenantId === null || p.tenantId === job.tenantId),
  );
}

/** Null for a job that is not waiting to start. */
export function admissionOf(job: JobLike, scopes: PauseScope[]): Admission | null {
  if (job.status !== "queued" && job.status !== "retrying") return null;
  if (job.admittedAt) return "admitted";
  return pausedBy(scopes, job) ? "paused" : "waiting";
}
