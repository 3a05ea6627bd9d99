/**
 * The datasets a tenant can export, and the SQL that reads them. COPY takes
 * no bind parameters, so every value is validated first and then quoted with
 * escapeLiteral.
 */
import type { ExportRequest, DatasetName } from "./schema";

type Dataset = { table: string; columns: string[]; timeColumn: string };

export const datasets: Record<DatasetName, Dataset> = {
  customers: {
    table: "customers",
    columns: ["id", "name", "email", "country", "plan", "notes", "metadata", "created_at"],
    timeColumn: "created_at",
  },
  orders: {
    table: "orders",
    columns: ["id", "customer_id", "status", "amount", "currency", "line_items", "note", "created_at", "updated_at"],
    timeColumn: "created_at",
  },
  events: {
    table: "events",
    columns: ["id", "customer_id", "type", "source", "payload", "message", "occurred_at"],
    timeColumn: "occurred_at",
  },
};

export type Quote = (value: string) => string;

/** The SELECT an export runs: the tenant's rows of one dataset in the filter window, in id order. */
export function buildExportQuery(
  tenantId: string,
  request: Pick<ExportRequest, "dataset" | "filter">,
  quote: Quote,
): string {
  const ds = datasets[request.dataset];
  const where = [`tenant_id = ${quote(tenantId)}::uuid`];
  if (request.filter?.from) where.push(`${ds.timeColumn} >= ${quote(request.filter.from)}::timestamptz`);
  if (request.filter?.to) where.push(`${ds.timeColumn} < ${quote(request.filter.to)}::timestamptz`);
  return `SELECT ${ds.columns.join(", ")} FROM ${ds.table} WHERE ${where.join(" AND ")} ORDER BY id`;
}

/**
 * Wraps a SELECT in the COPY that streams it.
 * JSONL: one JSON object per row. CSV format with control-character quote and
 * delimiter makes COPY emit each JSON text untouched (JSON escapes every
 * control character and newline, so neither can occur in it).
 */
export function buildCopyStatement(select: string, format: "csv" | "jsonl"): string {
  if (format === "csv") return `COPY (${select}) TO STDOUT WITH (FORMAT csv, HEADER true)`;
  return `COPY (SELECT row_to_json(r)::text FROM (${select}) r) TO STDOUT WITH (FORMAT csv, QUOTE E'\\x01', DELIMITER E'\\x02')`;
}
