/**
 * Holding each principal to SSE_MAX_STREAMS open streams, across every app
 * process: a stream is a row of `sse_streams` while it is open, refreshed on
 * each re-check of its principal (one batched UPDATE per process, lib/sse/recheck.ts); rows a dead process left behind age out.
 */
import { randomUUID } from "node:crypto";
import { principalKey } from "../auth/rate-limit";
import type { Principal } from "../auth/principal";
import { inTransaction, pool } from "../db";
import { env } from "../env";
import { AppError } from "../errors";

/** A row older than this is a stream whose process died (it missed two re-checks). */
const staleAfterS = () => (2 * env().SSE_RECHECK_MS) / 1000 + 10;

export type StreamSlot = { id: string; release(): Promise<void> };

/** Refreshes the rows of open streams, in one statement (lib/sse/recheck.ts calls it for a whole process). */
export async function touchStreamSlots(ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await pool().query("UPDATE sse_streams SET seen_at = now() WHERE id = ANY($1::uuid[])", [ids]);
}

/** Takes one of the principal's stream slots, or throws 429 (before any byte of the stream is sent). */
export async function takeStreamSlot(principal: Principal): Promise<StreamSlot> {
  const key = principalKey(principal);
  const max = env().SSE_MAX_STREAMS;
  const id = randomUUID();
  const taken = await inTransaction(async (tx) => {
    // One principal's opens are counted one at a time, in every process.
    await tx.query("SELECT pg_advisory_xact_lock(hashtext('conveyor.sse'), hashtext($1))", [key]);
    await tx.query("DELETE FROM sse_streams WHERE principal_key = $1 AND seen_at < now() - make_interval(secs => $2)", [
      key,
      staleAfterS(),
    ]);
    const { rowCount } = await tx.query(
      `INSERT INTO sse_streams (id, principal_key)
       SELECT $1, $2 WHERE (SELECT count(*) FROM sse_streams WHERE principal_key = $2) < $3`,
      [id, key, max],
    );
    return rowCount === 1;
  });
  if (!taken) {
    throw new AppError(
      "rate_limited",
      `Too many open event streams: at most ${max} at once; close one (or wait for one to end) and try again`,
      undefined,
      { details: { limit: max }, headers: { "Retry-After": "30" } },
    );
  }
  return {
    id,
    async release() {
      await pool().query("DELETE FROM sse_streams WHERE id = $1", [id]);
    },
  };
}
