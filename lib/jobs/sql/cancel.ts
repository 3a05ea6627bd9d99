/**
 * The one cancel (request-cancel.sql), for a person (lib/jobs/actions.ts), a
 * pause that stops running work, the reaper (the children of a cancelled
 * parent) and a schedule's `cancel_other` overlap rule: a waiting job ends
 * `cancelled` at once and its dispatch is removed; a running one gets the
 * request, which reaches its worker and aborts the attempt. Returns the ids it
 * changed. lib/jobs/transitions.ts is its door.
 */
import type { Prisma, SqlClient } from "../../db";
import { run } from "../../sql";
import * as sql from "./statements";

export async function requestCancel(
  client: SqlClient | Prisma.TransactionClient,
  jobIds: string[],
  reason: string | null,
  opts: {
    /** Who asked (a person), or nobody (the system). */
    by?: string | null;
    /** The message of a job that ends without a reason given. */
    fallbackMessage?: string;
  } = {},
): Promise<string[]> {
  if (!jobIds.length) return [];
  const { rows } = await run(client, sql.requestCancel, [
    jobIds,
    reason,
    opts.by ?? null,
    opts.fallbackMessage ?? "Cancelled on request",
  ]);
  // Their dispatches are unlocked (not running): removed, so no worker wakes for them.
  const waiting = rows.filter((r) => r.was !== "running").map((r) => r.id);
  if (waiting.length) await run(client, sql.removeDispatches, [waiting]);
  return rows.map((r) => r.id);
}
