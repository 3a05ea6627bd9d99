/**
 * The datasets a tenant can export, and the SQL that reads them. COPY takes
 * no bind parameters, so every value is validated first and then quoted with
 * escapeLiteral.
 */
import type { ExportRequest, DatasetName } from "./schema";

/** `text`: columns of free text, which a spreadsheet-safe CSV guards (see `buildExportQuery`). */
type Dataset = { table: string; columns: string[]; text: string[]; timeColumn: string };

export const datasets: Record<DatasetName, Dataset> = {
  customers: {
    table: "customers",
    columns: ["id", "name", "email", "country", "plan", "notes", "metadata", "created_at"],
    text: ["name", "email", "country", "plan", "notes"],
    timeColumn: "created_at",
  },
  orders: {
    table: "orders",
    columns: ["id", "customer_id", "status", "amount", "currency", "line_items", "note", "created_at", "updated_at"],
    text: ["status", "currency", "note"],
    timeColumn: "created_at",
  },
  events: {
    table: "events",
    columns: ["id", "customer_id", "type", "source", "payload", "message", "occurred_at"],
    text: ["type", "source", "message"],
    timeColumn: "occurred_at",
  },
};

export type Quote = (value: string) => string;

/** An inclusive id range: one part of a split export (its upper end is at most the snapshot's last id). */
export type IdRange = { from: number; to: number };

function whereOf(tenantId: string, request: Pick<ExportRequest, "dataset" | "filter">, quote: Quote, range?: IdRange) {
  const ds = datasets[request.dataset];
  const where = [`tenant_id = ${quote(tenantId)}::uuid`];
  if (range) where.push(`id BETWEEN ${Math.trunc(range.from)} AND ${Math.trunc(range.to)}`);
  if (request.filter?.from) where.push(`${ds.timeColumn} >= ${quote(request.filter.from)}::timestamptz`);
  if (request.filter?.to) where.push(`${ds.timeColumn} < ${quote(request.filter.to)}::timestamptz`);
  return where.join(" AND ");
}

/**
 * A free-text cell a spreadsheet would run as a formula (it starts with = + - @,
 * a tab or a carriage return) gets a leading apostrophe: OWASP's "CSV injection"
 * advice. Numbers and JSON columns are left as they are.
 */
function spreadsheetSafe(column: string): string {
  return `CASE WHEN ${column} ~ E'^[=+@\\t\\r-]' THEN '''' || ${column} ELSE ${column} END AS ${column}`;
}

/** The SELECT an export runs: the tenant's rows of one dataset in the filter window (and id range), in id order. */
export function buildExportQuery(
  tenantId: string,
  request: Pick<ExportRequest, "dataset" | "filter"> & { csvSafe?: boolean; format?: ExportRequest["format"] },
  quote: Quote,
  range?: IdRange,
): string {
  const ds = datasets[request.dataset];
  const safe = request.csvSafe === true && request.format !== "jsonl";
  const columns = ds.columns.map((c) => (safe && ds.text.includes(c) ? spreadsheetSafe(c) : c));
  return `SELECT ${columns.join(", ")} FROM ${ds.table} WHERE ${whereOf(tenantId, request, quote, range)} ORDER BY id`;
}

/** The first and last id an export covers (as text: bigint), for splitting it into parts. */
export function buildBoundsQuery(tenantId: string, request: Pick<ExportRequest, "dataset" | "filter">, quote: Quote) {
  const ds = datasets[request.dataset];
  return `SELECT min(id)::text AS lo, max(id)::text AS hi FROM ${ds.table} WHERE ${whereOf(tenantId, request, quote)}`;
}

/**
 * The id that ends a segment: the `rows`-th id of `range` in export order (null when the range
 * holds fewer rows, so the segment runs to its end). An index-only walk of `(tenant_id, id)`
 * unless a time filter makes it read the rows too.
 */
export function buildSegmentEndQuery(
  tenantId: string,
  request: Pick<ExportRequest, "dataset" | "filter">,
  quote: Quote,
  range: IdRange,
  rows: number,
): string {
  const ds = datasets[request.dataset];
  // Aliased apart from `id`: ORDER BY would otherwise sort the text ("10" before "9").
  return `SELECT id::text AS last_id FROM ${ds.table} WHERE ${whereOf(tenantId, request, quote, range)} ORDER BY id OFFSET ${Math.max(0, Math.trunc(rows) - 1)} LIMIT 1`;
}

/**
 * Splits the ids [lo, hi] into `parts` contiguous ranges of equal width (the
 * last takes the remainder). Ids are dense per tenant in practice, so equal
 * widths are near-equal row counts; a gap only makes a part smaller.
 */
export function splitRange(lo: number, hi: number, parts: number): IdRange[] {
  const n = Math.max(1, Math.min(parts, hi - lo + 1));
  const width = Math.floor((hi - lo + 1) / n);
  return Array.from({ length: n }, (_, i) => ({
    from: lo + i * width,
    to: i === n - 1 ? hi : lo + (i + 1) * width - 1,
  }));
}

/**
 * Wraps a SELECT in the COPY that streams it (CSV's header line only when `header`: the first
 * segment of a file has it, the others continue the file).
 * JSONL: one JSON object per row. CSV format with control-character quote and
 * delimiter makes COPY emit each JSON text untouched (JSON escapes every
 * control character and newline, so neither can occur in it).
 */
export function buildCopyStatement(select: string, format: "csv" | "jsonl", header = true): string {
  if (format === "csv") return `COPY (${select}) TO STDOUT WITH (FORMAT csv, HEADER ${header})`;
  return `COPY (SELECT row_to_json(r)::text FROM (${select}) r) TO STDOUT WITH (FORMAT csv, QUOTE E'\\x01', DELIMITER E'\\x02')`;
}
