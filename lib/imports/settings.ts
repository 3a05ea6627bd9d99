/** The imports workload's configuration (read through lib/env.ts, listed in its manifest). */
import { defineSettings, intFrom } from "../env";

export const importSettings = defineSettings({
  /** Rows per chunk of an import: each chunk is one load job (COPY into the staging table). */
  IMPORT_CHUNK_ROWS: intFrom(100_000, 100, 10_000_000),
  /**
   * Rows per committed piece of a chunk's load (one transaction and a checkpoint each): a load
   * killed mid-chunk continues after its last piece, so at most this many rows are loaded again.
   */
  IMPORT_LOAD_PIECE_ROWS: intFrom(20_000, 100, 10_000_000),
  /**
   * Records per committed piece of the parse stage (its clean file's segment, its bad rows, and a
   * checkpoint each): a parse killed mid-file continues after its last piece, so at most this many
   * records are parsed again. On S3 a piece is committed only once 5 MiB of clean rows are pending.
   */
  IMPORT_PARSE_PIECE_ROWS: intFrom(50_000, 100, 10_000_000),
  /** The longest record (a CSV record, quoted newlines included, or a JSON line) an import accepts, in bytes: scan refuses a longer one, naming its line. */
  IMPORT_MAX_RECORD_BYTES: intFrom(1024 * 1024, 1_024, 1024 * 1024 * 1024),
  /** How often each worker removes what ended imports leave (staging tables, their files, their uploads), in ms. */
  IMPORT_CLEANUP_MS: intFrom(5_000, 500, 3_600_000),
});
