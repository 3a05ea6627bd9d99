/**
 * The active pauses, for telling a paused job from one waiting its turn, and
 * for saying which pause holds it (reason, who, since): on the job itself, and
 * on a parent whose waiting children are held.
 */
import { pool } from "../db";
import { Batcher } from "../batcher";
import type { JobLike, PauseContext, PauseScope } from "./admission-state";

/**
 * Every active pause, with who made it (a small table). Concurrent callers (every create
 * a pause holds asks) share one statement per batch, each batch started after its callers
 * asked (lib/batcher.ts): a pause committed before the call is always in its answer.
 */
export function activePauseScopes(): Promise<PauseScope[]> {
  return (pauseBatcher ??= new Batcher(
    async (calls: null[]) => {
      const scopes = await readPauseScopes();
      return calls.map(() => scopes);
    },
    { maxBatch: 1000, maxInFlight: 1, eager: true },
  )).push(null);
}
let pauseBatcher: Batcher<null, PauseScope[]> | undefined;

async function readPauseScopes(): Promise<PauseScope[]> {
  const { rows } = await pool().query<PauseScope & { since: Date }>(
    `SELECT p.id, p.queue, p.type, p.tenant_id AS "tenantId", p.reason, u.email AS by, p.created_at AS since
       FROM queue_pauses p LEFT JOIN users u ON u.id = p.created_by_id
      WHERE p.resumed_at IS NULL ORDER BY p.created_at`,
  );
  return rows.map((r) => ({ ...r, since: new Date(r.since).toISOString() }));
}

/** A create's pause context: the pauses its INSERT read (lib/jobs/enqueue.ts), or, for a replayed job, read now. */
export function pauseScopesOfCreate(result: { job: ParentLike; pauses?: PauseScope[] }): Promise<PauseContext> {
  return result.pauses ? Promise.resolve({ scopes: result.pauses }) : pauseScopesFor([result.job]);
}

type ParentLike = JobLike & { id: string; childrenTotal?: number | null };

/**
 * What the DTOs of `jobs` need to show pauses: the active pauses (loaded only when
 * some job waits unadmitted or is a parent still open), and per open parent the
 * scopes of its children that wait unadmitted (an export whose parts are paused).
 */
export async function pauseScopesFor(jobs: ParentLike[]): Promise<PauseContext> {
  const waiting = jobs.some((j) => (j.status === "queued" || j.status === "retrying") && !j.admittedAt);
  const parents = jobs.filter(
    (j) =>
      j.childrenTotal !== null && j.childrenTotal !== undefined && (j.status === "running" || j.status === "retrying"),
  );
  if (!waiting && !parents.length) return { scopes: [] };
  const [scopes, held] = await Promise.all([
    activePauseScopes(),
    parents.length
      ? pool().query<{ parentId: string; queue: string; type: string; tenantId: string }>(
          `SELECT DISTINCT parent_id AS "parentId", queue, type, tenant_id AS "tenantId" FROM jobs
            WHERE parent_id = ANY($1::uuid[]) AND status IN ('queued', 'retrying') AND admitted_at IS NULL`,
          [parents.map((p) => p.id)],
        )
      : Promise.resolve({ rows: [] }),
  ]);
  if (!scopes.length) return { scopes };
  const heldChildren = new Map<string, Pick<JobLike, "queue" | "type" | "tenantId">[]>();
  for (const r of held.rows) {
    const list = heldChildren.get(r.parentId) ?? [];
    list.push(r);
    heldChildren.set(r.parentId, list);
  }
  return { scopes, heldChildren };
}
