/** The exports workload's configuration (read through lib/env.ts, listed in its manifest). */
import { defineSettings, intFrom } from "../env";

export const exportSettings = defineSettings({
  /** gzip level for compressed exports: 1 is fastest, 9 smallest. */
  EXPORT_GZIP_LEVEL: intFrom(1, 1, 9),
  /** Target rows per part of an export; one estimated larger is split into parts run in parallel. */
  EXPORT_PART_ROWS: intFrom(250_000, 1_000, 100_000_000),
  /**
   * Parts of one export worth running at once; an export is split by default only when at least two
   * can run now (idle bulk slots). 0: half this worker host's cores.
   */
  EXPORT_PARALLEL_PARTS: intFrom(0, 0, 1_000),
  /**
   * Rows per checkpointed segment of an export's file (and of each part's): after a crash the next
   * attempt continues after the last committed segment, so at most this many rows are read again.
   * On S3 a checkpoint also waits for 5 MiB of output (S3's smallest piece).
   */
  EXPORT_SEGMENT_ROWS: intFrom(100_000, 100, 100_000_000),
  /** How often each worker runs the export expiry cleanup (one at a time across the fleet), in ms. */
  EXPORT_CLEANUP_MS: intFrom(60_000, 1_000, 3_600_000),
});
