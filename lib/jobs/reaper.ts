/**
 * Crash recovery. graphile-worker alone would hold a dead worker's job for
 * 4 hours; the reaper makes it runnable again within about one lease, or at
 * once when the worker's process is known to be gone:
 *  - a worker whose heartbeat stopped for `deadAfterMs`, or whose process exited
 *    (its parent recorded it: lib/jobs/workers.ts recordWorkerExit), is declared dead, its
 *    graphile locks are released (`force_unlock_workers`) and the dispatch rows
 *    they held, now spent, are cleared (`complete_jobs`);
 *  - a running job whose lease expired, or whose worker exited, gets its
 *    attempt recorded as lost, a new fencing token (so the old holder's writes
 *    are refused) and goes back to wait for admission — or, out of budget, the
 *    dead-letter queue.
 * Every worker runs it periodically; an advisory lock lets one at a time work.
 */
import { maintenanceLocks, withMaintenanceLock } from "../maintenance";
import { getTaskDefinition } from "./registry";
import { nextStateAfterFailure } from "./retry";
import { cancelWaiting, reapLostAttempt, requestCancel, wakeWaitingParents } from "./transitions";

const BATCH = 200;

export type ReapResult = {
  deadWorkers: string[];
  reapedJobs: { id: string; status: string; previousOwner: string | null }[];
  redispatched: string[];
  /** A full batch of lost attempts was reaped: more may wait (a worker that held a thousand died). */
  more: boolean;
};

type Expired = {
  id: string;
  runAt: Date;
  type: string;
  priority: number;
  attempts: number;
  maxAttempts: number;
  fencingToken: bigint;
  leaseOwner: string | null;
  cancelRequested: boolean;
  /** How the lease owner's process exited, when it is known to be gone (null: merely silent). */
  ownerExit: string | null;
};

/** One pass of the reaper. Safe to call from any number of processes at once. */
export async function reap(opts: {
  deadAfterMs: number;
  /** The calling worker: it never declares itself dead. */ selfId?: string;
}): Promise<ReapResult> {
  const run = await withMaintenanceLock(
    maintenanceLocks.reaper,
    async (tx) => {
      const dead = await tx.$queryRaw<{ id: string; graphileWorkerIds: string[] }[]>`
        UPDATE workers SET state = 'dead', stopped_at = now()
        WHERE state IN ('running', 'stopping') AND id <> ${opts.selfId ?? ""}
          AND (heartbeat_at < now() - make_interval(secs => ${opts.deadAfterMs / 1000}::float8)
               OR exited_at IS NOT NULL)
        RETURNING id, graphile_worker_ids AS "graphileWorkerIds"`;
      const graphileIds = dead.flatMap((d) => d.graphileWorkerIds);
      if (graphileIds.length) {
        await tx.$executeRaw`SELECT graphile_worker.force_unlock_workers(${graphileIds}::text[])`;
      }
      // Locks no live worker owns: a worker killed before its first heartbeat recorded its
      // graphile ids (its pool fetches a local queue of jobs at once). Such a job's dispatch
      // would stay locked for graphile's 4 hours and the job wait in `queued`, admitted, that
      // long. A live worker records its ids within a heartbeat, long before its locks are this old.
      await tx.$executeRaw`
        SELECT graphile_worker.force_unlock_workers(array(
          SELECT DISTINCT g.locked_by FROM graphile_worker.jobs g
          WHERE g.locked_by IS NOT NULL
            AND g.locked_at < now() - make_interval(secs => ${opts.deadAfterMs / 1000}::float8)
            AND NOT EXISTS (SELECT 1 FROM workers w WHERE w.state IN ('running', 'stopping')
                            AND g.locked_by = ANY(w.graphile_worker_ids))))`;
      // Dispatch rows whose single graphile attempt was spent by a dead worker: never runnable again.
      await tx.$executeRaw`
        SELECT graphile_worker.complete_jobs(array(
          SELECT id FROM graphile_worker.jobs
          WHERE locked_at IS NULL AND attempts >= max_attempts AND key IS NULL
          LIMIT ${BATCH}))`;

      const expired = await tx.$queryRaw<Expired[]>`
        SELECT j.id, j.run_at AS "runAt", j.type, j.priority, j.attempts, j.max_attempts AS "maxAttempts",
               j.fencing_token AS "fencingToken", j.lease_owner AS "leaseOwner",
               j.cancel_requested_at IS NOT NULL AS "cancelRequested", w.exit AS "ownerExit"
        FROM jobs j
        LEFT JOIN workers w ON w.id = j.lease_owner AND w.exited_at IS NOT NULL
        -- Expired leases; and the attempts of a worker whose process is known to have exited
        -- (recordWorkerExit), at once. A worker merely silent, declared dead, may only have
        -- stalled, and stops its own attempts before their lease runs out: reaping those
        -- earlier could let two attempts run at once.
        WHERE j.status = 'running' AND (j.lease_expires_at < now() OR w.id IS NOT NULL)
        ORDER BY j.lease_expires_at
        LIMIT ${BATCH}
        FOR UPDATE OF j SKIP LOCKED`;

      const reapedJobs: ReapResult["reapedJobs"] = [];
      for (const job of expired) {
        const owner = job.leaseOwner ?? "unknown";
        const message =
          job.ownerExit !== null
            ? `The attempt was lost: worker ${owner} exited (${job.ownerExit})`
            : `The attempt was lost: worker ${owner} stopped renewing its lease`;
        const next = job.cancelRequested
          ? { status: "cancelled" as const }
          : nextStateAfterFailure(getTaskDefinition(job.type), job.attempts, job.maxAttempts, {
              errorClass: "crashed",
            });
        await tx.$executeRaw`
          UPDATE job_attempts SET outcome = 'lost', finished_at = now(), error_class = 'crashed', error_message = ${message},
                 duration_ms = (extract(epoch FROM now() - started_at) * 1000)::int
          WHERE job_id = ${job.id}::uuid AND fencing_token = ${job.fencingToken} AND outcome = 'running'`;
        // A retry goes back to wait for admission at its old place in line (its run_at
        // is kept), not behind everything queued since.
        await reapLostAttempt(tx, job.id, next.status, message);
        reapedJobs.push({ id: job.id, status: next.status, previousOwner: job.leaseOwner });
      }
      // Admitted jobs whose dispatch is gone for good (graphile gave up on it after
      // the database failed under every try): back to wait, admission dispatches them again.
      const orphans = await tx.$queryRaw<{ id: string }[]>`
        UPDATE jobs j SET admitted_at = NULL
        WHERE j.id IN (
          SELECT j2.id FROM jobs j2
          WHERE j2.admitted_at IS NOT NULL AND j2.status IN ('queued', 'retrying')
            AND j2.admitted_at < now() - interval '1 minute'
            AND NOT EXISTS (SELECT 1 FROM graphile_worker.jobs g WHERE g.key = j2.id::text AND g.attempts < g.max_attempts)
          LIMIT ${BATCH})
        RETURNING j.id`;

      // Waiting, unadmitted jobs that carry a cancel request (a request that
      // raced the end of an attempt): admission never starts them, so end them here.
      await cancelWaiting(tx, null);

      // The children of a cancelled parent (an export's parts, cancelled from its page or by a
      // pause): the waiting ones end, the running ones are asked to stop. Children are locked
      // before their parent's trigger locks it, and locked ones are left for the next pass.
      const targets = await tx.$queryRaw<{ id: string }[]>`
        SELECT c.id FROM jobs c JOIN jobs p ON p.id = c.parent_id
        WHERE p.status = 'cancelled' AND c.status IN ('scheduled', 'queued', 'retrying', 'running')
          AND c.cancel_requested_at IS NULL
        ORDER BY c.id
        LIMIT ${BATCH} FOR UPDATE OF c SKIP LOCKED`;
      await requestCancel(
        tx,
        targets.map((t) => t.id),
        "Its parent job was cancelled",
      );

      // A parent waiting for children that have all ended: the trigger that wakes it
      // runs in the last child's transaction; this covers a parent that missed it.
      await wakeWaitingParents(tx);

      // The quota counts written by connections that have since ended, folded into one row per
      // tenant and user (open_job_counts: one row per writing connection, so none waits on another).
      await tx.$queryRaw`SELECT conveyor_open_job_counts_compact()`;

      return {
        deadWorkers: dead.map((d) => d.id),
        reapedJobs,
        redispatched: orphans.map((o) => o.id),
        more: expired.length === BATCH,
      };
    },
    { timeoutMs: 30_000 },
  );
  return run.ran ? run.value : { deadWorkers: [], reapedJobs: [], redispatched: [], more: false };
}
