/**
 * The operators' dead-letter digest: every NOTIFY_DIGEST_WINDOW_MS, for each tenant where an
 * operator asked for it (preference `dead_letters`, off by default), the top-level jobs that
 * failed for good since the last window, as one mail per such operator — never one per job.
 * Each tenant's `notification_digest_marks` row says where its digest got to; the transaction
 * that writes a window's digests moves it, holding it locked, so two processes never send one
 * window twice. A window without new dead letters sends nothing.
 */
import { inTransaction, pool } from "../db";
import { run } from "../sql";
import { notificationSettings } from "./settings";
import { digestTenants, insertDigests, moveDigestMark, newDeadLetters, takeDigestMark } from "./sql/statements";

/** Writes the digests due now; answers how many tenants had news. */
export async function sendDueDigests(): Promise<{ tenants: number; deadLetters: number }> {
  const s = notificationSettings();
  const { rows: tenants } = await run(pool(), digestTenants, []);
  let told = 0;
  let deadLetters = 0;
  for (const { tenantId } of tenants) {
    const n = await inTransaction(async (tx) => {
      const { rows } = await run(tx, takeDigestMark, [tenantId, s.NOTIFY_DIGEST_WINDOW_MS]);
      const mark = rows[0];
      if (!mark) return 0;
      const { rows: found } = await run(tx, newDeadLetters, [
        tenantId,
        mark.coveredTo,
        mark.windowTo,
        s.NOTIFY_DIGEST_MAX_LISTED,
      ]);
      const { total, ids } = found[0]!;
      if (total > 0) await run(tx, insertDigests, [tenantId, mark.coveredTo, mark.windowTo, total, ids]);
      await run(tx, moveDigestMark, [tenantId, mark.windowTo]);
      return total;
    });
    if (n > 0) told++;
    deadLetters += n;
  }
  return { tenants: told, deadLetters };
}
