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

/**
 * A good value's COPY text (a string, or null for a missing one), or what is
 * wrong with it (`{ reason }`). No object for a good value: a million rows are
 * millions of cells.
 */
export type Checked = string | null | { reason: string };

export function isBad(c: Checked): c is { reason: string } {
  return c !== null && typeof c === "object";
}

const bad = (reason: string) => ({ reason });
const REQUIRED = bad("is required");
const NOT_JSON = bad("is not valid JSON");
const NOT_CONTAINER = bad("must be a JSON object or array");
const HAS_NUL = bad("holds a NUL character");
const messages = {
  bigint: bad("must be a whole number of at most 18 digits"),
  money: bad("must be a number with at most 2 decimals"),
  char2: bad("must be a 2-letter country code (ISO 3166, upper case)"),
  char3: bad("must be a 3-letter currency code (ISO 4217, upper case)"),
  email: bad("must be an email address"),
  time: bad("must be a date and time (ISO 8601)"),
  text: bad(`must be at most 10000 characters`),
};

/** Checks one cell against its column; `fromCsv`: an empty string is a missing value. */
export function checkCell(col: ColumnSpec, cell: Cell, fromCsv: boolean): Checked {
  if (cell === undefined || cell === null || (fromCsv && cell === "" && !col.allowEmpty)) {
    return col.required ? REQUIRED : null;
  }
  if (col.kind === "json") {
    if (typeof cell === "string") {
      if (!fromCsv) return NOT_CONTAINER;
      const first = cell.charCodeAt(0);
      // An object or an array starts so (JSON.parse then checks the rest); anything else is not one.
      if (first !== 0x7b && first !== 0x5b) return /^\s*[[{]/.test(cell) ? parsesAsContainer(cell) : NOT_CONTAINER;
      return parsesAsContainer(cell);
    }
    if (typeof cell !== "object") return NOT_CONTAINER;
    const text = JSON.stringify(cell);
    return text.includes("\\u0000") ? HAS_NUL : text;
  }
  const text = typeof cell === "string" ? cell : typeof cell === "number" ? String(cell) : null;
  if (text === null) return bad(`must be a ${col.kind === "bigint" || col.kind === "money" ? "number" : "string"}`);
  switch (col.kind) {
    case "bigint":
      return BIGINT.test(text) ? text : messages.bigint;
    case "money":
      return MONEY.test(text) ? text : messages.money;
    case "char2":
      return CHAR2.test(text) ? text : messages.char2;
    case "char3":
      return CHAR3.test(text) ? text : messages.char3;
    case "email":
      return text.length <= 254 && EMAIL.test(text) ? text : messages.email;
    case "time":
      return validTime(text) ? text : messages.time;
    default:
      if (text.length > MAX_TEXT) return messages.text;
      if (text.includes("\u0000")) return HAS_NUL;
      return text;
  }
}

function parsesAsContainer(text: string): Checked {
  try {
    const v: unknown = JSON.parse(text);
    if (v === null || typeof v !== "object") return NOT_CONTAINER;
  } catch {
    return NOT_JSON;
  }
  return text.includes("\u0000") ? HAS_NUL : text;
}

function validTime(text: string): boolean {
  const m = TIME.exec(text);
  if (!m) return false;
  const year = +m[1]!;
  const month = +m[2]!;
  const day = +m[3]!;
  if (year < 1 || month < 1 || month > 12 || day < 1) return false;
  if (day > 28 && day > new Date(Date.UTC(year, month, 0)).getUTCDate()) return false;
  if (m[4] !== undefined && (+m[4] > 23 || +m[5]! > 59 || (m[6] !== undefined && +m[6] > 60))) return false;
  return true;
}

/** A value in COPY's text format. */
export function copyText(value: string | null): string {
  if (value === null) return "\\N";
  if (!/[\\\t\n\r]/.test(value)) return value;
  return value.replace(/[\\\t\n\r]/g, (c) => (c === "\\" ? "\\\\" : c === "\t" ? "\\t" : c === "\n" ? "\\n" : "\\r"));
}
