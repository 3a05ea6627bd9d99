/**
 * Suspends an attempt until its child jobs end, in one statement fenced by its
 * token: the children are inserted (admitted inline where there is room), the
 * checkpoint is saved, and the job stays `running` but gives up its lease, its
 * admission slot and its fencing token (so the suspended attempt's heartbeat
 * can write nothing more); the attempt row ends as `waiting`. The database
 * wakes the job when the last child ends (trigger `jobs_child_changed`) and the
 * next claim resumes the same attempt. False when the token no longer matches,
 * or a cancel request came first (then no child is made).
 */
import type { SqlClient } from "../../db";
import { run } from "../../sql";
import * as sql from "./statements";

export type ChildRow = {
  id: string;
  type: string;
  queue: string;
  input: unknown;
  inputHash: string;
  maxAttempts: number;
  /** Its place among the parent's children; default: its place in this fan-out. */
  index?: number;
};

export async function suspendForChildren(
  client: SqlClient,
  opts: {
    jobId: string;
    token: bigint;
    attemptId: bigint;
    checkpoint: unknown;
    children: ChildRow[];
    /** False: the parent's progress stays its own (a pipeline's stages) instead of the children's sum. */
    rollup?: boolean;
    /** The fanning-out attempt's trace context, stored with every child so the tree is one trace. */
    traceContext?: unknown;
  },
): Promise<boolean> {
  const children = opts.children.map((c, index) => ({
    id: c.id,
    type: c.type,
    queue: c.queue,
    input: c.input,
    input_hash: c.inputHash,
    max_attempts: c.maxAttempts,
    child_index: c.index ?? index,
  }));
  const { rows } = await run(client, sql.suspendForChildren, [
    opts.jobId,
    opts.token.toString(),
    JSON.stringify(opts.checkpoint ?? null),
    opts.attemptId.toString(),
    children.length,
    JSON.stringify(children),
    opts.rollup ?? true,
    opts.traceContext == null ? null : JSON.stringify(opts.traceContext),
  ]);
  return rows[0]?.held === true;
}
