/**
 * Stuck jobs for the operator console (lib/ops/console.ts): what waits too
 * long or has stopped moving, why, and the action that helps.
 */
import { z } from "zod";
import type { Principal } from "../auth/principal";
import { Prisma } from "../db";
import { env } from "../env";
import { parseOrThrow } from "../errors";
import { withReadDb } from "../read-db";
import { consoleTenant, tenantParam } from "./console-tenant";

/** The pause that holds a stuck job (or a waiting parent's parts). */
export type StuckPauseDto = {
  id: string;
  queue: string | null;
  type: string | null;
  reason: string | null;
  by: string | null;
  since: string;
};

/** Why a job is stuck, in the order an operator deals with them. */
export const STUCK_KINDS = [
  "paused",
  "waiting_parent",
  "lease_expired",
  "no_heartbeat",
  "queued_too_long",
  "retrying_repeatedly",
] as const;
export type StuckKind = (typeof STUCK_KINDS)[number];

export type StuckJobDto = {
  id: string;
  tenantId: string;
  type: string;
  queue: string;
  status: string;
  attempts: number;
  maxAttempts: number;
  /** An export's name (its dataset, format), when the job has one. */
  input: unknown;
  /**
   * Why it is listed: held by a pause (at once), a parent waiting for its parts
   * (held by a pause, or for long), a lease that ran out, a silent heartbeat, a
   * long wait for a slot or a worker, retries again and again.
   */
  kind: StuckKind;
  /** Since when the condition holds. */
  since: string;
  detail: string;
  /** What an operator would do about it (the row's action does it where it can). */
  suggestion: string;
  /** The pause that holds it (kind paused) or its parts (waiting_parent); else null. */
  pause: StuckPauseDto | null;
  /** Admitted to a worker pool (a long wait then means no worker serves its queue). */
  admitted: boolean;
};

export const stuckSchema = z
  .object({
    tenant: tenantParam,
    /** A running job whose last heartbeat is older than this is listed. Default: 3 heartbeats of its worker. */
    heartbeatSeconds: z.coerce.number({ error: "must be a number" }).int().min(1).max(86_400).optional(),
    /** A due job not started after this long is listed (a paused one at once). */
    queuedMinutes: z.coerce.number({ error: "must be a number" }).int().min(1).max(10_080).default(10),
    /** A retrying job past this many attempts is listed. */
    attempts: z.coerce.number({ error: "must be a number" }).int().min(2).max(1_000).default(3),
  })
  .strict();

/** The first active pause whose scope holds a job of (queue, type, tenant): a LATERAL subquery. */
const PAUSE_OF = (alias: string) =>
  Prisma.raw(`
    (SELECT p.id, p.queue, p.type, p.reason, u.email AS by, p.created_at AS since
       FROM queue_pauses p LEFT JOIN users u ON u.id = p.created_by_id
      WHERE p.resumed_at IS NULL
        AND (p.queue IS NULL OR p.queue = ${alias}.queue) AND (p.type IS NULL OR p.type = ${alias}.type)
        AND (p.tenant_id IS NULL OR p.tenant_id = ${alias}.tenant_id)
      ORDER BY p.created_at LIMIT 1)`);

/**
 * Jobs that need a look, each kind apart: held by a pause (listed at once),
 * parents waiting for parts a pause holds (or waiting long), running with an
 * expired lease or a silent heartbeat, due but not started for `queuedMinutes`,
 * or retrying again and again; each with what to do. At most 100 of each kind,
 * oldest first. A parent waiting for its parts holds no lease and sends no
 * heartbeat: it is never taken for a stalled worker.
 */
export async function listStuckJobs(principal: Principal, raw: unknown): Promise<StuckJobDto[]> {
  const q = parseOrThrow(stuckSchema, raw);
  const tenantId = await consoleTenant(principal, q.tenant);
  const heartbeatSeconds = q.heartbeatSeconds ?? Math.ceil((3 * env().WORKER_HEARTBEAT_MS) / 1000);
  type Row = Omit<StuckJobDto, "since" | "suggestion" | "detail" | "pause"> & {
    since: Date;
    errorMessage: string | null;
    pauseId: string | null;
    pauseQueue: string | null;
    pauseType: string | null;
    pauseReason: string | null;
    pauseBy: string | null;
    pauseSince: Date | null;
    partsOpen: number | null;
  };
  const rows = await withReadDb(
    principal,
    (rdb) => rdb.$queryRaw<Row[]>`
    (SELECT id, tenant_id AS "tenantId", type, queue, status::text, attempts, max_attempts AS "maxAttempts", input,
            CASE WHEN lease_expires_at < now() THEN 'lease_expired' ELSE 'no_heartbeat' END AS kind,
            CASE WHEN lease_expires_at < now() THEN lease_expires_at ELSE heartbeat_at END AS since,
            true AS admitted, error_message AS "errorMessage", NULL::uuid AS "pauseId", NULL AS "pauseQueue",
            NULL AS "pauseType", NULL AS "pauseReason", NULL AS "pauseBy", NULL::timestamptz AS "pauseSince",
            NULL::int AS "partsOpen"
     FROM jobs
     WHERE status = 'running' AND NOT (lease_owner IS NULL AND waiting_since IS NOT NULL)
       AND (${tenantId}::uuid IS NULL OR tenant_id = ${tenantId}::uuid)
       AND (lease_expires_at < now() OR heartbeat_at < now() - make_interval(secs => ${heartbeatSeconds}::float8))
     ORDER BY 10 LIMIT 100)
    UNION ALL
    (SELECT j.id, j.tenant_id, j.type, j.queue, j.status::text, j.attempts, j.max_attempts, j.input, 'paused',
            greatest(j.run_at, p.since), false, j.error_message, p.id, p.queue, p.type, p.reason, p.by, p.since, NULL
     FROM jobs j CROSS JOIN LATERAL ${PAUSE_OF("j")} p
     WHERE j.status IN ('queued', 'retrying') AND j.admitted_at IS NULL AND j.run_at <= now()
       AND (${tenantId}::uuid IS NULL OR j.tenant_id = ${tenantId}::uuid)
     ORDER BY j.run_at LIMIT 100)
    UNION ALL
    (SELECT j.id, j.tenant_id, j.type, j.queue, j.status::text, j.attempts, j.max_attempts, j.input, 'waiting_parent',
            j.waiting_since, true, j.error_message, p.id, p.queue, p.type, p.reason, p.by, p.since,
            (SELECT count(*)::int FROM jobs c WHERE c.parent_id = j.id
                AND c.status IN ('scheduled', 'queued', 'running', 'retrying'))
     FROM jobs j
     LEFT JOIN LATERAL (
       SELECT hp.* FROM jobs c CROSS JOIN LATERAL ${PAUSE_OF("c")} hp
        WHERE c.parent_id = j.id AND c.status IN ('queued', 'retrying') AND c.admitted_at IS NULL
        LIMIT 1) p ON true
     WHERE j.status = 'running' AND j.lease_owner IS NULL AND j.waiting_since IS NOT NULL
       AND (${tenantId}::uuid IS NULL OR j.tenant_id = ${tenantId}::uuid)
       AND (p.id IS NOT NULL OR j.waiting_since < now() - make_interval(mins => ${q.queuedMinutes}::int))
     ORDER BY j.waiting_since LIMIT 100)
    UNION ALL
    (SELECT id, tenant_id, type, queue, status::text, attempts, max_attempts, input, 'queued_too_long', run_at,
            admitted_at IS NOT NULL, error_message, NULL, NULL, NULL, NULL, NULL, NULL, NULL
     FROM jobs
     WHERE status = 'queued' AND NOT conveyor_paused(queue, type, tenant_id)
       AND (${tenantId}::uuid IS NULL OR tenant_id = ${tenantId}::uuid)
       AND run_at < now() - make_interval(mins => ${q.queuedMinutes}::int)
     ORDER BY run_at LIMIT 100)
    UNION ALL
    (SELECT id, tenant_id, type, queue, status::text, attempts, max_attempts, input, 'retrying_repeatedly', started_at,
            admitted_at IS NOT NULL, error_message, NULL, NULL, NULL, NULL, NULL, NULL, NULL
     FROM jobs
     WHERE status = 'retrying' AND (${tenantId}::uuid IS NULL OR tenant_id = ${tenantId}::uuid)
       AND attempts >= ${q.attempts}
     ORDER BY attempts DESC LIMIT 100)`,
  );
  return rows.map(
    ({ errorMessage, since, pauseId, pauseQueue, pauseType, pauseReason, pauseBy, pauseSince, partsOpen, ...r }) => {
      const pause =
        pauseId && pauseSince
          ? {
              id: pauseId,
              queue: pauseQueue,
              type: pauseType,
              reason: pauseReason,
              by: pauseBy,
              since: pauseSince.toISOString(),
            }
          : null;
      const { detail, suggestion } = advise(r.kind, {
        admitted: r.admitted,
        errorMessage,
        attempts: r.attempts,
        queue: r.queue,
        pause,
        partsOpen,
        isAdmin: principal.isPlatformAdmin,
      });
      return { ...r, since: (since ?? new Date()).toISOString(), detail, suggestion, pause };
    },
  );
}

function advise(
  kind: StuckKind,
  j: {
    admitted: boolean;
    errorMessage: string | null;
    attempts: number;
    queue: string;
    pause: StuckPauseDto | null;
    partsOpen: number | null;
    isAdmin: boolean;
  },
): { detail: string; suggestion: string } {
  const pauseWords = (p: StuckPauseDto) => `paused by ${p.by ?? "an operator"}${p.reason ? ` (“${p.reason}”)` : ""}`;
  // Only platform admins can open the Workers page: nobody else is sent there.
  const workers = j.isAdmin ? "check the Workers page" : "ask a platform admin to check the workers";
  switch (kind) {
    case "paused":
      return {
        detail: j.pause ? `Its scope is ${pauseWords(j.pause)}.` : "Its scope is paused.",
        suggestion: "Resume the pause to let it start, or cancel the job.",
      };
    case "waiting_parent":
      return j.pause
        ? {
            detail: `Waiting for ${j.partsOpen ?? "its"} parts, held: their scope is ${pauseWords(j.pause)}.`,
            suggestion: "Resume the pause to let its parts run, or cancel the export.",
          }
        : {
            detail: `Waiting a long time for ${j.partsOpen ?? "its"} parts to end.`,
            suggestion: "Open it to see its parts; cancel it if it is no longer wanted.",
          };
    case "lease_expired":
      return {
        detail: "Its worker stopped renewing the lease.",
        suggestion: `The reaper hands it to another worker within seconds; if it stays, no worker is running: ${workers}.`,
      };
    case "no_heartbeat":
      return {
        detail: "Its lease holds but the heartbeat is late: the worker may be stalled.",
        suggestion: `Cancel the job if it must stop now; ${workers}.`,
      };
    case "queued_too_long":
      return j.admitted
        ? {
            detail: `Admitted, but no worker took it: no worker serves the ${j.queue} queue.`,
            suggestion: j.isAdmin
              ? `Start a worker for its queue (npm run worker -- --queues ${j.queue}).`
              : `Ask a platform admin to start a worker for the ${j.queue} queue.`,
          }
        : {
            detail: "Waiting for a slot: its tenant is at its cap or the queue is full.",
            suggestion: "Raise the tenant's cap on the Queues page, or cancel what is not needed.",
          };
    case "retrying_repeatedly":
      return {
        detail: `${j.attempts} attempts so far; last error: ${j.errorMessage ?? "unknown"}`,
        suggestion: "Fix the cause, or cancel it; it reaches the dead-letter queue when its budget runs out.",
      };
  }
}
