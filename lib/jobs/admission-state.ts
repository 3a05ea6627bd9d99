/**
 * Where a waiting job stands in admission, for people: admitted (about to
 * start), waiting (its tenant is at its cap, or it awaits its turn), or paused.
 * Pure: the browser bundle uses it too (lib/jobs/dto.ts). Admission itself
 * (lib/admission) decides; this only reads what it decided.
 */
export type Admission = "admitted" | "waiting" | "paused";

export type PauseScope = {
  queue: string | null;
  type: string | null;
  tenantId: string | null;
  /** Who paused, why and since when (absent where only the scope was loaded). */
  id?: string;
  reason?: string | null;
  by?: string | null;
  since?: string;
};

/** A pause as a job shows it: the pause's id, reason, who and since when; `via` says it holds the job's parts. */
export type JobPauseDto = {
  id: string | null;
  queue: string | null;
  type: string | null;
  reason: string | null;
  by: string | null;
  since: string | null;
  via: "self" | "parts";
};

/** The active pauses, and per open parent the scopes of its children waiting unadmitted. */
export type PauseContext = {
  scopes: PauseScope[];
  heldChildren?: Map<string, Pick<JobLike, "queue" | "type" | "tenantId">[]>;
};

export type JobLike = { status: string; queue: string; type: string; tenantId: string; admittedAt: Date | null };

/** The first pause whose scope holds the job; same rule as SQL's conveyor_paused: a null field matches everything. */
export function pauseOf(scopes: PauseScope[], job: Pick<JobLike, "queue" | "type" | "tenantId">): PauseScope | null {
  return (
    scopes.find(
      (p) =>
        (p.queue === null || p.queue === job.queue) &&
        (p.type === null || p.type === job.type) &&
        (p.tenantId === null || p.tenantId === job.tenantId),
    ) ?? null
  );
}

export function pausedBy(scopes: PauseScope[], job: Pick<JobLike, "queue" | "type" | "tenantId">): boolean {
  return pauseOf(scopes, job) !== null;
}

/**
 * The pause that holds a job: its own (it waits unadmitted in a paused scope), or
 * for an open parent one that holds some of its waiting children.
 */
export function jobPause(job: JobLike & { id: string }, ctx: PauseContext): JobPauseDto | null {
  const toDto = (p: PauseScope, via: JobPauseDto["via"]): JobPauseDto => ({
    id: p.id ?? null,
    queue: p.queue,
    type: p.type,
    reason: p.reason ?? null,
    by: p.by ?? null,
    since: p.since ?? null,
    via,
  });
  if (admissionOf(job, ctx.scopes) === "paused") {
    const p = pauseOf(ctx.scopes, job);
    return p ? toDto(p, "self") : null;
  }
  for (const child of ctx.heldChildren?.get(job.id) ?? []) {
    const p = pauseOf(ctx.scopes, child);
    if (p) return toDto(p, "parts");
  }
  return null;
}

/** Null for a job that is not waiting to start. */
export function admissionOf(job: JobLike, scopes: PauseScope[]): Admission | null {
  if (job.status !== "queued" && job.status !== "retrying") return null;
  if (job.admittedAt) return "admitted";
  return pausedBy(scopes, job) ? "paused" : "waiting";
}
