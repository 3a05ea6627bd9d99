/**
 * The stages of an import, each a task type with its own retries, timeout and
 * lease (lib/jobs/pipeline.ts runs them in order):
 *
 *   scan    size, sha256, UTF-8, not binary, CSV quoting, header against the dataset
 *   parse   every row checked against the dataset; good rows → a clean file in COPY's
 *           text format (one row per line), bad rows → errors.csv (line, column, reason);
 *           in committed pieces of IMPORT_PARSE_PIECE_ROWS records, each checkpointed: a killed
 *           parse reads the upload again from its last checkpoint's byte offset
 *   chunk   the clean file cut into byte ranges of IMPORT_CHUNK_ROWS rows (nothing copied)
 *   load    an unlogged staging table, filled by one `import_load_chunk` job per chunk
 *           (COPY … FROM STDIN in committed pieces of IMPORT_LOAD_PIECE_ROWS, each checkpointed:
 *           a killed load continues after its last piece, and every row loads once)
 *   commit  one transaction moves the staged rows into the tenant's table (insert, or upsert
 *           by the natural key) and drops the staging table; all or nothing, once
 *
 * Files live under `<tenant>/imports/<importId>/` in the export storage; the
 * workload's cleanup removes them (and the upload) when the import ends.
 */
export * from "./stage-input";
export * from "./scan";
export * from "./rows";
export * from "./parse";
export * from "./load";
export * from "./load-chunk";
export * from "./commit";
