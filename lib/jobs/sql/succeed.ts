/**
 * Records a successful attempt, fenced by its token: the job becomes
 * `succeeded` with its result, and its attempt row `succeeded` — or `lost`,
 * changing nothing else, when another attempt owns the job by now. With a
 * `commit` step (the task records its output, e.g. an export's file), it runs
 * in the same transaction and only if the fence held. Without one, several
 * successes go in one statement (`succeedJobs`, the runner's batches).
 */
import type pg from "pg";
import { inTransaction, type SqlClient } from "../../db";
import { run } from "../../sql";
import * as sql from "./statements";

export type SuccessRecord = { jobId: string; token: bigint; attemptId: bigint; result: unknown };

/** Records several successes in one statement; true for each whose fence held. */
export async function succeedJobs(client: SqlClient, records: SuccessRecord[]): Promise<boolean[]> {
  const { rows } = await run(client, sql.succeed, [
    records.map((r) => r.jobId),
    records.map((r) => r.token.toString()),
    records.map((r) => JSON.stringify(r.result ?? null)),
    records.map((r) => r.attemptId.toString()),
  ]);
  const ok = new Set(rows.map((r) => r.id!.toLowerCase()));
  return records.map((r) => ok.has(r.jobId.toLowerCase()));
}

export async function succeedJob(
  from: pg.Pool,
  opts: SuccessRecord & {
    /** Runs inside the transaction, only when the fence held. */
    commit?: (tx: SqlClient) => Promise<void>;
  },
): Promise<boolean> {
  // The common case: one statement, one round trip.
  if (!opts.commit) return (await succeedJobs(from, [opts]))[0]!;
  const commit = opts.commit;
  return inTransaction(async (tx) => {
    const ok = (await succeedJobs(tx, [opts]))[0]!;
    if (ok) await commit(tx);
    return ok;
  }, from);
}
