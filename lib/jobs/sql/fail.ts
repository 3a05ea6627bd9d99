/**
 * Records a failed attempt, fenced by its token, in one statement. The caller
 * says what the failure leads to (`failed`, `retrying` after `delayMs`, or
 * `cancelled`); a cancel request recorded meanwhile wins over all of them (a
 * job asked to stop is never scheduled again). A retry gives its admission slot
 * back and waits for admission when due; one without backoff keeps its place
 * in line. A shutdown-interrupted attempt (`interrupted`) raises the budget by
 * one. Returns the job's new status, or null when another attempt owns the job
 * (the attempt row is then closed as `lost`).
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

export async function failJob(
  client: SqlClient,
  opts: { jobId: string; token: bigint; attemptId: bigint; failure: FailureRecord },
): Promise<"failed" | "retrying" | "cancelled" | null> {
  const f = opts.failure;
  const { rows } = await run(client, sql.fail, [
    opts.jobId,
    opts.token.toString(),
    f.next,
    Math.max(0, f.delayMs),
    f.errorClass,
    f.message,
    f.stack,
    opts.attemptId.toString(),
    f.interrupted,
  ]);
  return (rows[0]?.status ?? null) as "failed" | "retrying" | "cancelled" | null;
}
