/**
 * What an import may bring into each dataset: its columns, which are required,
 * how each cell is checked, and how a good row is written for COPY (text
 * format: one row per line, tab-separated, `\N` for null). The columns are
 * the export's (lib/exports/datasets.ts), so a file Conveyor exported imports
 * back as it is.
 */
import type { DatasetName } from "../tenants/datasets";

type Kind = "bigint" | "text" | "email" | "char2" | "char3" | "money" | "json" | "time";

export type ColumnSpec = {
  name: string;
  kind: Kind;
  /** Must be in the header and hold a value. */
  required?: boolean;
  /** May be null (an empty CSV cell). */
  nullable?: boolean;
  /** An empty CSV cell is the empty string, not a missing value. */
  allowEmpty?: boolean;
  /** Postgres type of the staging column. */
  pg: string;
  /** The value used when the column is absent from the file (SQL). */
  fallback?: string;
};

export type ImportDataset = {
  table: string;
  columns: ColumnSpec[];
  /** The natural key an upsert matches on, within the tenant. */
  key: "email" | "id";
};

const id: ColumnSpec = { name: "id", kind: "bigint", nullable: true, pg: "bigint" };
const now = "now()";

export const importDatasets: Record<DatasetName, ImportDataset> = {
  customers: {
    table: "customers",
    key: "email",
    columns: [
      id,
      { name: "name", kind: "text", required: true, pg: "text" },
      { name: "email", kind: "email", required: true, pg: "text" },
      { name: "country", kind: "char2", required: true, pg: "text" },
      { name: "plan", kind: "text", required: true, pg: "text" },
      { name: "notes", kind: "text", nullable: true, pg: "text" },
      { name: "metadata", kind: "json", nullable: true, pg: "jsonb", fallback: `'{}'::jsonb` },
      { name: "created_at", kind: "time", nullable: true, pg: "timestamptz", fallback: now },
    ],
  },
  orders: {
    table: "orders",
    key: "id",
    columns: [
      id,
      { name: "customer_id", kind: "bigint", required: true, pg: "bigint" },
      { name: "status", kind: "text", required: true, pg: "text" },
      { name: "amount", kind: "money", required: true, pg: "numeric(12,2)" },
      { name: "currency", kind: "char3", required: true, pg: "text" },
      { name: "line_items", kind: "json", nullable: true, pg: "jsonb", fallback: `'[]'::jsonb` },
      { name: "note", kind: "text", nullable: true, pg: "text" },
      { name: "created_at", kind: "time", nullable: true, pg: "timestamptz", fallback: now },
      { name: "updated_at", kind: "time", nullable: true, pg: "timestamptz", fallback: now },
    ],
  },
  events: {
    table: "events",
    key: "id",
    columns: [
      id,
      { name: "customer_id", kind: "bigint", nullable: true, pg: "bigint" },
      { name: "type", kind: "text", required: true, pg: "text" },
      { name: "source", kind: "text", required: true, pg: "text" },
      { name: "payload", kind: "json", nullable: true, pg: "jsonb", fallback: `'{}'::jsonb` },
      { name: "message", kind: "text", required: true, allowEmpty: true, pg: "text" },
      { name: "occurred_at", kind: "time", nullable: true, pg: "timestamptz", fallback: now },
    ],
  },
};

/** What is wrong with a header, or null: unknown, repeated or missing columns. */
export function headerProblem(dataset: DatasetName, header: string[]): string | null {
  const ds = importDatasets[dataset];
  const known = new Set(ds.columns.map((c) => c.name));
  const unknown = header.filter((h) => !known.has(h));
  if (unknown.length) {
    return `unknown column${unknown.length > 1 ? "s" : ""} ${unknown.map((u) => JSON.stringify(u)).join(", ")} for ${dataset}; expected ${ds.columns.map((c) => c.name).join(", ")}`;
  }
  const seen = new Set<string>();
  for (const h of header) {
    if (seen.has(h)) return `column "${h}" appears twice`;
    seen.add(h);
  }
  const missing = ds.columns.filter((c) => c.required && !seen.has(c.name)).map((c) => c.name);
  if (missing.length) return `missing column${missing.length > 1 ? "s" : ""} ${missing.join(", ")} for ${dataset}`;
  return null;
}

const BIGINT = /^[0-9]{1,18}$/;
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const CHAR2 = /^[A-Z]{2}$/;
const CHAR3 = /^[A-Z]{3}$/;
const MONEY = /^-?[0-9]{1,10}(\.[0-9]{1,2})?$/;
// What Postgres writes (2026-11-30 12:01:00.123+00) and ISO 8601 (2026-11-30T12:01:00Z).
const TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,6})?)?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?$/;
const MAX_TEXT = 10_000;

/** A cell as it reaches the checks: CSV gives strings, JSON Lines any JSON value. */
export type Cell = string | number | boolean | null | object | undefined;

/** The COPY text form of a good value, or an error (a reason). */
export type Checked = { ok: true; value: string | null } | { ok: false; reason: string };

function bad(reason: string): Checked {
  return { ok: false, reason };
}

/** Checks one cell against its column; `fromCsv`: an empty string is a missing value. */
export function checkCell(col: ColumnSpec, cell: Cell, fromCsv: boolean): Checked {
  if (cell === undefined || cell === null || (fromCsv && cell === "" && !col.allowEmpty)) {
    if (col.required) return bad("is required");
    return { ok: true, value: null };
  }
  if (col.kind === "json") {
    if (typeof cell === "string") {
      if (!fromCsv) return bad("must be a JSON object or array");
      try {
        const v: unknown = JSON.parse(cell);
        if (v === null || typeof v !== "object") return bad("must be a JSON object or array");
      } catch {
        return bad("is not valid JSON");
      }
      return cell.includes("\u0000") ? bad("holds a NUL character") : { ok: true, value: cell };
    }
    if (typeof cell !== "object") return bad("must be a JSON object or array");
    const text = JSON.stringify(cell);
    return text.includes("\\u0000") ? bad("holds a NUL character") : { ok: true, value: text };
  }
  const text = typeof cell === "string" ? cell : typeof cell === "number" ? String(cell) : null;
  if (text === null) return bad(`must be a ${col.kind === "bigint" || col.kind === "money" ? "number" : "string"}`);
  switch (col.kind) {
    case "bigint":
      return BIGINT.test(text) ? { ok: true, value: text } : bad("must be a whole number of at most 18 digits");
    case "money":
      return MONEY.test(text) ? { ok: true, value: text } : bad("must be a number with at most 2 decimals");
    case "char2":
      return CHAR2.test(text)
        ? { ok: true, value: text }
        : bad("must be a 2-letter country code (ISO 3166, upper case)");
    case "char3":
      return CHAR3.test(text)
        ? { ok: true, value: text }
        : bad("must be a 3-letter currency code (ISO 4217, upper case)");
    case "email":
      return text.length <= 254 && EMAIL.test(text) ? { ok: true, value: text } : bad("must be an email address");
    case "time":
      return validTime(text) ? { ok: true, value: text } : bad("must be a date and time (ISO 8601)");
    default:
      if (text.length > MAX_TEXT) return bad(`must be at most ${MAX_TEXT} characters`);
      if (text.includes("\u0000")) return bad("holds a NUL character");
      return { ok: true, value: text };
  }
}

function validTime(text: string): boolean {
  const m = TIME.exec(text);
  if (!m) return false;
  const [, y, mo, d, h, mi, s] = m.map((x) => (x === undefined ? 0 : Number(x)));
  if (y! < 1 || mo! < 1 || mo! > 12 || d! < 1 || h! > 23 || mi! > 59 || s! > 60) return false;
  return d! <= new Date(Date.UTC(y!, mo!, 0)).getUTCDate();
}

/** A value in COPY's text format. */
export function copyText(value: string | null): string {
  if (value === null) return "\\N";
  if (!/[\\\t\n\r]/.test(value)) return value;
  return value.replace(/[\\\t\n\r]/g, (c) => (c === "\\" ? "\\\\" : c === "\t" ? "\\t" : c === "\n" ? "\\n" : "\\r"));
}
