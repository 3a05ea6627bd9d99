/**
 * Streaming one dataset of one tenant (or one id range of it) with
 * `COPY (SELECT …) TO STDOUT` (rows counted from its messages) through optional gzip into
 * storage: the work of the `export` task and of each `export_part`.
 */
import { Transform, type Readable } from "node:stream";
import { createGzip } from "node:zlib";
import type pg from "pg";
import { pool } from "../db";
import { exportSettings } from "./settings";
import type { JobContext } from "../jobs/task";
import { storage } from "../storage";
import { withSpan } from "../tracing";
import { buildCopyStatement, buildExportQuery, type IdRange } from "./datasets";
import { countingCopyTo } from "./copy";
import { createRowCounter } from "./row-counter";
import type { ExportRequest } from "./schema";

/** File name of an export's single file: `orders-0193….csv.gz`. */
export function exportFileName(jobId: string, request: ExportRequest): string {
  const ext = request.format === "csv" ? "csv" : "jsonl";
  return `${request.dataset}-${jobId.slice(0, 8)}.${ext}${request.compression === "gzip" ? ".gz" : ""}`;
}

export function exportContentType(request: ExportRequest): string {
  if (request.compression === "gzip") return "application/gzip";
  return request.format === "csv" ? "text/csv; charset=utf-8" : "application/x-ndjson; charset=utf-8";
}

/** The planner's row estimate for a query: cheap, and good enough for a progress bar's total. */
export async function estimateRows(client: pg.PoolClient, select: string): Promise<number> {
  const res = await client.query<{ "QUERY PLAN": [{ Plan: { "Plan Rows": number } }] }>(
    `EXPLAIN (FORMAT JSON) ${select}`,
  );
  return Math.max(0, Math.round(res.rows[0]?.["QUERY PLAN"][0].Plan["Plan Rows"] ?? 0));
}

/**
 * What COPY's socket reads are gathered into before gzip, the hash and the file.
 * They are about 25 KB on average; unbatched, each became a hash update and a
 * file write through libuv's thread pool: 82,000 writes and 188,000 futex calls
 * for a 10M-row JSONL export (2.2 GB), and the worker's system time as high as
 * its user time (18-20 s of CPU in all, against 12.5 s gathered into 256 KiB).
 * 1 MiB saved another 1.5 s but raised the worker's peak RSS by 15-20 MB, and the
 * memory goal (200 MB) is what the workers already come close to.
 */
const COALESCE_BYTES = 256 * 1024;

/** Gathers small chunks into ones of at least `bytes` (the last one holds what is left). */
export function coalesce(bytes: number): Transform {
  let parts: Buffer[] = [];
  let size = 0;
  const take = () => {
    const out = parts.length === 1 ? parts[0]! : Buffer.concat(parts, size);
    parts = [];
    size = 0;
    return out;
  };
  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      parts.push(chunk);
      size += chunk.length;
      if (size >= bytes) cb(null, take());
      else cb();
    },
    flush(cb) {
      if (size > 0) cb(null, take());
      else cb();
    },
  });
}

/**
 * The stages between COPY and storage: its reads gathered (`coalesce`), then
 * gzip when asked. Rows are counted from COPY's messages (./copy.ts), not
 * here; `countBytes` adds the byte-scanning counter for a COPY stream that
 * cannot count them. bench:export's "gzip stage" runs these same stages.
 */
export function createExportTransforms(
  request: Pick<ExportRequest, "format" | "compression">,
  countBytes?: { onRows: (done: number) => void },
): { transforms: Transform[]; rows: () => number } {
  const transforms: Transform[] = [coalesce(COALESCE_BYTES)];
  // CSV's header line is counted like a row.
  let rows = request.format === "csv" ? -1 : 0;
  if (countBytes) {
    const countRows = createRowCounter(request.format);
    transforms.push(
      new Transform({
        transform(chunk: Buffer, _enc, cb) {
          rows += countRows(chunk);
          countBytes.onRows(Math.max(rows, 0));
          cb(null, chunk);
        },
      }),
    );
  }
  // Larger output chunks than zlib's 16 KiB default: fewer chunks through the
  // digest and file stages (measured ~20% faster on the gzip stage).
  if (request.compression === "gzip") {
    transforms.push(createGzip({ level: exportSettings().EXPORT_GZIP_LEVEL, chunkSize: 256 * 1024 }));
  }
  return { transforms, rows: () => Math.max(rows, 0) };
}

type StreamExportOptions = {
  tenantId: string;
  request: ExportRequest;
  /** One part's ids (inclusive). */
  range?: IdRange;
  key: string;
  signal?: AbortSignal;
  onRows?: (done: number, estimate: number) => void;
};

/**
 * Streams an export into storage under `key` from one REPEATABLE READ
 * snapshot; resolves with the exact row count, size and sha256.
 */
export function streamExport(opts: StreamExportOptions): Promise<{ rows: number; size: number; sha256: string }> {
  // One span for the COPY from its snapshot to its COMMIT; gzip runs inside it (a stage of the stream),
  // and the storage write it feeds is its child.
  return withSpan(
    "export.copy",
    {
      "db.system.name": "postgresql",
      "db.operation.name": "COPY",
      "conveyor.export.dataset": opts.request.dataset,
      "conveyor.export.format": opts.request.format,
      "conveyor.export.compression": opts.request.compression,
      ...(opts.range
        ? { "conveyor.export.range_from": opts.range.from, "conveyor.export.range_to": opts.range.to }
        : {}),
    },
    async (span) => {
      const stored = await copyToStorage(opts);
      span.setAttributes({ "db.response.returned_rows": stored.rows, "conveyor.export.bytes": stored.size });
      return stored;
    },
  );
}

async function copyToStorage(opts: StreamExportOptions): Promise<{ rows: number; size: number; sha256: string }> {
  const client = await pool().connect();
  let broken: Error | undefined;
  let copyStream: Readable | undefined;
  try {
    await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    // Stable, zone-independent timestamps in the file.
    await client.query("SET LOCAL TimeZone = 'UTC'; SET LOCAL DateStyle = 'ISO, YMD'");
    const select = buildExportQuery(opts.tenantId, opts.request, (v) => client.escapeLiteral(v), opts.range);
    const estimate = await estimateRows(client, select);
    opts.onRows?.(0, estimate);

    const copy = countingCopyTo(buildCopyStatement(select, opts.request.format));
    // pg hands its connection's errors to the COPY stream as an 'error' event, even once the
    // stream is destroyed and nothing reads it: when a failed write gives the connection up
    // below, its "Connection terminated" must land here, not as an uncaught exception that
    // kills the worker (and with it every attempt it runs, before their failures are written).
    copyStream = copy.stream;
    copy.stream.on("error", () => {});
    // CSV's header is one message more than its rows.
    const header = opts.request.format === "csv" ? 1 : 0;
    if (copy.counted) copy.onPush((messages) => opts.onRows?.(Math.max(messages - header, 0), estimate));
    const onRows = (done: number) => opts.onRows?.(done, estimate);
    const { transforms, rows } = createExportTransforms(opts.request, copy.counted ? undefined : { onRows });
    const stored = await storage().write(opts.key, client.query(copy.stream), transforms, opts.signal);
    await client.query("COMMIT");
    // COPY's own count (its CommandComplete) is exact; prefer it.
    const exact = copy.stream.rowCount || (copy.counted ? Math.max(copy.messages() - header, 0) : rows());
    return { rows: exact, ...stored };
  } catch (err) {
    // A connection mid-COPY cannot be reused: destroy it (the COPY's stream first, should the
    // storage write have failed before reading it).
    broken = err instanceof Error ? err : new Error(String(err));
    if (copyStream && !copyStream.destroyed) copyStream.destroy(broken);
    throw err;
  } finally {
    client.release(broken);
  }
}

/**
 * A task's file: streams the export (or one range of it) to `key` with the
 * attempt's progress and abort signal; a file completed after a cancel or a
 * lost lease is deleted, never left behind.
 */
export async function exportToStorage(
  ctx: Pick<JobContext<unknown>, "job" | "signal" | "progress">,
  opts: { request: ExportRequest; key: string; range?: IdRange },
): Promise<{ rows: number; size: number; sha256: string }> {
  ctx.progress({ done: 0, unit: "rows", stage: "exporting" });
  const stored = await streamExport({
    tenantId: ctx.job.tenantId,
    request: opts.request,
    range: opts.range,
    key: opts.key,
    signal: ctx.signal,
    onRows: (done, estimate) => ctx.progress({ done, total: Math.max(estimate, done) }),
  });
  if (ctx.signal.aborted) {
    await storage().delete(opts.key);
    throw ctx.signal.reason;
  }
  return stored;
}
