/**
 * Node flags every worker process starts with (`npm start`, `npm run worker`,
 * compose.yaml, the Dockerfile's worker command).
 *
 * `--max-semi-space-size=4` (MB; V8's default is 16 on 64-bit): an export
 * streams hundreds of MB through short-lived buffers and objects, and with
 * the default young generation they pile up between scavenges. Measured on a
 * 2M-row CSV export (docs/BENCHMARKS.md, "Export"): the worker's peak RSS went
 * from 191 MB idle / 215 MB exporting to 175 / 175 MB; scavenges of a smaller
 * young generation are cheaper each, and no slower export was measured.
 */
export const WORKER_NODE_FLAGS = ["--max-semi-space-size=4"];
