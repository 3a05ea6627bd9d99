/**
 * The active pauses, for telling a paused job from one waiting its turn, and
 * for saying which pause holds it (reason, who, since): on the job itself, and
 * on a parent whose waiting children are held.
 */
import { pool, prepared } from "../db";
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

/**
 * Every active pause with who made it, oldest first, as a JSON array of PauseScope: one SQL
 * expression, read alone here or inside a create's INSERT (lib/jobs/enqueue.ts, which answers a
 * paused create without a second round trip).
 */
export const ACTIVE_PAUSES_JSON = `(SELECT coalesce(json_agg(json_build_object(
    'id', p.id, 'queue', p.queue, 'type', p.type, 'tenantId', p.tenant_id, 'reason', p.reason, 'by', u.email,
    'since', to_char(p.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) ORDER BY p.created_at), '[]')
  FROM queue_pauses p LEFT JOIN users u ON u.id = p.created_by_id WHERE p.resumed_at IS NULL)`;

async function readPauseScopes(): Promise<PauseScope[]> {
  const { rows } = await pool().query<{ scopes: PauseScope[] }>(prepared(`SELECT ${ACTIVE_PAUSES_JSON} AS scopes`));
  return rows[0]!.scopes;
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
