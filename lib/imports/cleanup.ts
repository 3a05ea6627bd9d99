/**
 * What an ended import leaves behind, removed by the workers (one at a time):
 * its staging table (whenever it ended: a replay loads again), and once it
 * succeeded or was cancelled — or failed more than a day ago, the time left
 * to replay it — its stage files and its upload (unless a later import took the upload: a
 * failed import's "import again" reuses it, and that import removes it when it ends). Its errors file stays until
 * it expires like an export's file. And a parse stage that failed for good or
 * was cancelled mid-file leaves, in its checkpoint, the staged clean file and
 * its pieces' bad-row objects, which no later run continues: those go too.
 */
import { inTransaction, pool } from "../db";
import { run } from "../sql";
import { stagedParseDiscarded, stagedParses } from "./sql/statements";
import { withMaintenanceLock } from "../maintenance";
import { storage } from "../storage";
import { segmentStateSchema } from "../storage/driver";
import { removeUpload } from "../uploads/service";
import { logger } from "../log";

/** The maintenance lock of this cleanup service: one process at a time, fleet-wide. */
export const IMPORT_CLEANUP_LOCK = "import_cleanup";

const KEEP_FAILED_MS = 24 * 3_600_000;

type Ended = {
  id: string;
  upload_id: string;
  staging_table: string | null;
  files: string[];
  status: string;
  finished_at: Date | null;
  /** A later import of the same upload that has not been cleaned up: the upload is its to remove. */
  reused: boolean;
};

export async function cleanupImports(
  limit = 50,
): Promise<{ ran: boolean; staging: number; imports: number; parses: number }> {
  const run = await withMaintenanceLock(
    IMPORT_CLEANUP_LOCK,
    (tx) =>
      tx.$queryRaw<Ended[]>`
      SELECT i.id::text, i.upload_id, i.staging_table, i.files, j.status::text AS status, j.finished_at,
             EXISTS (SELECT 1 FROM imports o WHERE o.upload_id = i.upload_id AND o.id <> i.id
                       AND o.cleaned_at IS NULL AND o.created_at > i.created_at) AS reused
      FROM imports i JOIN jobs j ON j.id = i.job_id
      WHERE i.cleaned_at IS NULL AND j.status IN ('succeeded', 'failed', 'cancelled')
        -- Only those with something to do now: a failed import kept for its replay is not read
        -- again every tick (nor may a day of them crowd out the imports that just ended).
        AND (i.staging_table IS NOT NULL OR j.status <> 'failed'
             OR j.finished_at < now() - make_interval(secs => ${KEEP_FAILED_MS / 1000}::float8))
      ORDER BY i.created_at LIMIT ${limit}`,
  );
  if (!run.ran) return { ran: false, staging: 0, imports: 0, parses: 0 };
  let staging = 0;
  let imports = 0;
  for (const i of run.value) {
    if (i.staging_table) {
      try {
        // A chunk still loading (its cancel is on the way) holds the table: try again next time.
        const dropped = await inTransaction(async (tx) => {
          await tx.query("SET LOCAL lock_timeout = '2s'");
          const { rows } = await tx.query<{ t: string | null }>("SELECT to_regclass($1)::text AS t", [i.staging_table]);
          if (rows[0]?.t) await tx.query(`DROP TABLE IF EXISTS ${i.staging_table}`);
          await tx.query("UPDATE imports SET staging_table = NULL WHERE id = $1", [i.id]);
          return Boolean(rows[0]?.t);
        });
        if (dropped) staging++;
      } catch (err) {
        logger.error({ err }, `[imports] could not drop ${i.staging_table}: ${(err as Error).message}`);
        continue;
      }
    }
    const done = i.status !== "failed" || (i.finished_at && Date.now() - i.finished_at.getTime() >= KEEP_FAILED_MS);
    if (!done) continue;
    for (const key of i.files) {
      try {
        await storage().delete(key);
      } catch (err) {
        logger.error({ err, storageKey: key }, `[imports] could not delete ${key}: ${(err as Error).message}`);
      }
    }
    if (!i.reused) await removeUpload(i.upload_id);
    await pool().query("UPDATE imports SET cleaned_at = now() WHERE id = $1", [i.id]);
    imports++;
  }
  return { ran: true, staging, imports, parses: await sweepParseStaging(limit) };
}

/**
 * Parse stages that ended without their output (failed for good, cancelled) while their clean
 * file was staged: the staging file (or S3 multipart upload) and the bad-row objects their
 * checkpoint names are thrown away — a replay parses afresh in a new stage job — and leave the
 * checkpoint. Returns how many.
 */
export async function sweepParseStaging(limit = 50): Promise<number> {
  const { rows } = await run(pool(), stagedParses, [limit]);
  let swept = 0;
  for (const row of rows) {
    try {
      const clean = segmentStateSchema.safeParse(row.clean);
      if (clean.success) await storage().discardSegments(clean.data);
      for (const key of Array.isArray(row.pieces) ? row.pieces : []) {
        if (typeof key === "string") await storage().delete(key);
      }
      await run(pool(), stagedParseDiscarded, [row.id]);
      swept++;
    } catch (err) {
      logger.error(
        { err, jobId: row.id },
        `[imports] could not discard the staged parse of ${row.id}: ${(err as Error).message}`,
      );
    }
  }
  return swept;
}
