/**
 * Holding each user to SSE_MAX_STREAMS open streams and each tenant to
 * SSE_MAX_STREAMS_PER_TENANT, across every app process: a stream is a row of
 * `sse_streams` (its user's key, its tenant) while it is open, refreshed on
 * each re-check of its principal (one batched UPDATE per process, lib/sse/recheck.ts); rows a dead process left behind age out.
 */
import { randomUUID } from "node:crypto";
import { principalKey } from "../auth/rate-limit";
import type { Principal } from "../auth/principal";
import { inTransaction, pool } from "../db";
import { env } from "../env";
import { AppError } from "../errors";
import { run } from "../sql";
import * as sql from "./sql/statements";

/** A row older than this is a stream whose process died (it missed two re-checks). */
const staleAfterS = () => (2 * env().SSE_RECHECK_MS) / 1000 + 10;

export type StreamSlot = { id: string; release(): Promise<void> };

/** Refreshes the rows of open streams, in one statement (lib/sse/recheck.ts calls it for a whole process). */
export async function touchStreamSlots(ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await run(pool(), sql.touchStreams, [ids]);
}

/**
 * Takes one of the principal's stream slots, or throws 429 (before any byte of the stream is sent):
 * at most SSE_MAX_STREAMS for its user (every token and session of theirs together) and
 * SSE_MAX_STREAMS_PER_TENANT for its tenant.
 */
export async function takeStreamSlot(principal: Principal): Promise<StreamSlot> {
  const key = principalKey(principal);
  const tenantId = principal.tenantId;
  const { SSE_MAX_STREAMS: perUser, SSE_MAX_STREAMS_PER_TENANT: perTenant } = env();
  const id = randomUUID();
  const refusal = await inTransaction(async (tx) => {
    // Opens are counted one at a time per tenant and per user, in every process; the tenant's lock
    // first, always (a user of two tenants takes the user's lock last, so no two opens deadlock).
    if (tenantId) await run(tx, sql.lockTenantStreams, [tenantId]);
    await run(tx, sql.lockUserStreams, [key]);
    await run(tx, sql.forgetStaleStreams, [key, tenantId, staleAfterS()]);
    const { rows } = await run(tx, sql.countStreams, [key, tenantId]);
    const used = rows[0]!;
    if (used.user >= perUser) return { scope: "user" as const, limit: perUser, used: used.user };
    if (tenantId && used.tenant >= perTenant) return { scope: "tenant" as const, limit: perTenant, used: used.tenant };
    await run(tx, sql.insertStream, [id, key, tenantId]);
    return null;
  });
  if (refusal) {
    throw new AppError(
      "rate_limited",
      refusal.scope === "user"
        ? `Too many open event streams: at most ${refusal.limit} at once per user (all your tokens and sessions together); close one (or wait for one to end) and try again`
        : `Too many open event streams in this tenant: at most ${refusal.limit} at once for all its users together; close one (or wait for one to end) and try again`,
      undefined,
      { details: { limit: refusal.limit, scope: refusal.scope }, headers: { "Retry-After": "30" } },
    );
  }
  return {
    id,
    async release() {
      await run(pool(), sql.deleteStream, [id]);
    },
  };
}
