/**
 * Every change of a job's status, in one place. The statements live in
 * lib/jobs/sql (one a file); this is their door, and no other file of lib/ or
 * scripts/ writes `jobs.status` or a cancel request (a test greps for it:
 * tests/unit/transitions.test.ts). The lifecycle trigger refuses any pair of
 * statuses its table does not allow, whoever writes.
 *
 *   start          queued | retrying → running           claimJobs (the runner)
 *   succeed        running → succeeded                   succeedJob, succeedJobs
 *   fail           running → failed | retrying | cancelled   failJob, failJobs (a request to cancel wins)
 *   suspend        running, waiting for its children     suspendForChildren (status stays running)
 *   wake           running (waiting) → retrying          wakeWaitingParents (the trigger's backstop)
 *   request-cancel open → cancelled (waiting) or a request (running)   requestCancel
 *   cancel-waiting queued | retrying with a request → cancelled       cancelWaiting
 *   release        a dispatch that claimed nothing: cancelled, or its slot given back   releaseUnclaimable
 *   reap           running, attempt lost → retrying | failed | cancelled   reapLostAttempt
 *   dead-letter    queued | retrying → failed (it can never run)   failWaiting, rejectUnregistered
 *   promote        scheduled → queued (its time came)    promoteDelayedJobs
 *   expire         succeeded → expired (its output is gone)   expireJobs
 */
import type { Prisma, SqlClient } from "../db";
import { run } from "../sql";
import * as sql from "./sql/statements";

export { claimJob, claimJobs, type ClaimedJob, type ClaimRequest } from "./sql/claim";
export { succeedJob, succeedJobs, type SuccessRecord } from "./sql/succeed";
export { failJob, failJobs, type FailedAttempt, type FailStatus, type FailureRecord } from "./sql/fail";
export { suspendForChildren, type ChildRow } from "./sql/wait-for-children";
export { releaseUnclaimable } from "./sql/release";
export { rejectUnregistered } from "./sql/reject";
export { requestCancel } from "./sql/cancel";

type Client = SqlClient | Prisma.TransactionClient;

/**
 * Ends the jobs of `jobIds` (null: every one) that wait unadmitted while
 * carrying a cancel request (a request that raced the end of an attempt):
 * admission never starts them. Returns their ids.
 */
export async function cancelWaiting(client: Client, jobIds: string[] | null): Promise<string[]> {
  const { rows } = await run(client, sql.cancelWaiting, [jobIds]);
  return rows.map((r) => r.id);
}

/**
 * A running job whose attempt was lost (lease expired, worker exited), locked
 * by the caller: a new fencing token, the error, and `next` — `retrying` back
 * to wait for admission at its old place in line, or its end. The slots the
 * attempt held in downstream guards are freed with it (lib/downstream): a
 * SIGKILLed worker's request never answers, and must neither hold its slot nor
 * read as a slow call any longer.
 */
export async function reapLostAttempt(
  client: Client,
  jobId: string,
  next: "retrying" | "failed" | "cancelled",
  message: string,
): Promise<void> {
  if ((await run(client, sql.reapAttempt, [jobId, next, message])).rowCount === 0) return;
  await run(client, sql.freeDownstreamSlots, [jobId]);
}

/** Parents whose children all ended but that missed the trigger that wakes them: `retrying`. */
export async function wakeWaitingParents(client: Client): Promise<number> {
  return (await run(client, sql.wakeWaitingParents, [])).rowCount;
}

/**
 * Dead-letters waiting jobs that can never run: `failed`, permanent, with
 * `message`. `unadmittedOnly`: leave the ones already dispatched (their run
 * finds out). Returns their ids.
 */
export async function failWaiting(
  client: Client,
  jobIds: string[],
  message: string,
  opts: { unadmittedOnly: boolean },
): Promise<string[]> {
  if (!jobIds.length) return [];
  const { rows } = await run(client, sql.failWaiting, [jobIds, message, opts.unadmittedOnly]);
  return rows.map((r) => r.id);
}

/** Delayed one-off jobs whose time came: `scheduled` → `queued` (admission takes them from there). */
export async function promoteDelayedJobs(client: Client): Promise<number> {
  return (await run(client, sql.promoteDelayed, [])).rowCount;
}

/** Succeeded jobs whose output is gone (an export's files): `expired`. Returns their ids. */
export async function expireJobs(client: Client, jobIds: string[]): Promise<string[]> {
  if (!jobIds.length) return [];
  const { rows } = await run(client, sql.expire, [jobIds]);
  return rows.map((r) => r.id);
}
