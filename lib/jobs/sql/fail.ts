/**
 * Records failed attempts, each fenced by its token, in one statement (a batch:
 * a worker handing back a thousand attempts at shutdown sends a few statements,
 * not a thousand). The caller says what each failure leads to (`failed`,
 * `retrying` after `delayMs`, or `cancelled`); a cancel request recorded
 * meanwhile wins over all of them (a job asked to stop is never scheduled
 * again). A retry gives its admission slot back and waits for admission when
 * due; one without backoff keeps its place in line. A shutdown-interrupted
 * attempt (`interrupted`) raises the budget by one. Returns each job's new
 * status, or null when another attempt owns the job (the attempt row is then
 * closed as `lost`).
 */
import type { SqlClient } from "../../db";
import { run } from "../../sql";
import * as sql from "./statements";

export type FailureRecord = {
  errorClass: string;
  message: string;
  stack: string | null;
  /** What the failure leads to, before a cancel request is taken into account. */
  next: "failed" | "retrying" | "cancelled";
  /** With `retrying`: how long to wait before the next attempt. */
  delayMs: number;
  /** A shutdown ended the attempt: its budget grows by one. */
  interrupted: boolean;
};

export type FailedAttempt = { jobId: string; token: bigint; attemptId: bigint; failure: FailureRecord };

export type FailStatus = "failed" | "retrying" | "cancelled" | null;

export async function failJobs(client: SqlClient, batch: readonly FailedAttempt[]): Promise<FailStatus[]> {
  const { rows } = await run(client, sql.fail, [
    batch.map((b) => b.jobId),
    batch.map((b) => b.token.toString()),
    batch.map((b) => b.failure.next),
    batch.map((b) => Math.max(0, b.failure.delayMs)),
    batch.map((b) => b.failure.errorClass),
    batch.map((b) => b.failure.message),
    // node-postgres sends a null element as NULL; the generated type knows only the element's type.
    batch.map((b) => b.failure.stack) as string[],
    batch.map((b) => b.attemptId.toString()),
    batch.map((b) => b.failure.interrupted),
  ]);
  const status = new Map(rows.map((r) => [r.id, r.status]));
  return batch.map((b) => (status.get(b.jobId) ?? null) as FailStatus);
}

/** One failed attempt (see failJobs). */
export async function failJob(client: SqlClient, attempt: FailedAttempt): Promise<FailStatus> {
  return (await failJobs(client, [attempt]))[0]!;
}
