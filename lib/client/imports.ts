/**
 * Browser-side fetchers, query keys and wire → UI helpers for imports: the
 * checks a file passes before it is sent, the format and dataset its name
 * suggests, and where an import stands among its stages.
 */
import type { ExportLinkDto } from "../files/links";
import { importDatasets, type ColumnSpec } from "../imports/columns";
import type { ImportDto, ImportListStatus, ImportStageDto } from "../imports/service";
import { request } from "./api";
import { formatBytes } from "./format";

export type { ImportDto, ImportListStatus, ImportStageDto };

export const importKeys = {
  all: ["imports"] as const,
  list: (status?: string) => [...importKeys.all, "list", status ?? "any"] as const,
  detail: (id: string) => [...importKeys.all, "detail", id] as const,
};

export const IMPORT_DATASETS = ["customers", "orders", "events"] as const;
export const IMPORT_FORMATS = ["csv", "jsonl"] as const;
export type ImportFormat = (typeof IMPORT_FORMATS)[number];

/** What the API takes (POST /api/v1/imports). */
export type ImportBody = {
  uploadId: string;
  dataset: string;
  format: string;
  mode: string;
  maxBadRows: number;
};

/** The most an upload may declare (`UPLOAD_MAX_BYTES`' default, 2 GiB). */
export const MAX_UPLOAD_BYTES = 2 * 1024 ** 3;

/** Bytes per PATCH: docs/API.md advises 50–64 MiB (a 2 GiB file is 32 requests, far inside the write budget). */
export const UPLOAD_CHUNK_BYTES = 64 * 1024 ** 2;

/** The statuses the imports list filters by (`?status=` on /imports), as the filter offers them. */
export const IMPORT_STATUS_OPTIONS: readonly (readonly [ImportListStatus, string])[] = [
  ["queued", "queued"],
  ["running", "running"],
  ["retrying", "retrying"],
  ["succeeded", "succeeded"],
  ["failed", "failed"],
  ["cancelled", "cancelled"],
];

/** A `?status=` value the list can filter by, or undefined. */
export function importStatusOf(raw: string | null | undefined): ImportListStatus | undefined {
  return IMPORT_STATUS_OPTIONS.find(([s]) => s === raw)?.[0];
}

/** The tenant's imports, newest first (at most `limit`, ≤ 100), only those in `status` when given. */
export function fetchImports(limit = 20, status?: ImportListStatus): Promise<{ imports: ImportDto[] }> {
  return request(`/api/v1/imports?limit=${limit}${status ? `&status=${status}` : ""}`);
}

export function fetchImport(id: string): Promise<ImportDto> {
  return request(`/api/v1/imports/${encodeURIComponent(id)}`);
}

/** Starts an import of a finished upload; answers with the import's queued job. */
export function createImport(body: ImportBody, idempotencyKey: string): Promise<ImportDto["job"]> {
  return request("/api/v1/imports", {
    method: "POST",
    body: JSON.stringify(body),
    headers: { "Idempotency-Key": idempotencyKey },
  });
}

/** A short-lived link (`/d/…`, 15 minutes by default) to the import's errors file. */
export function createImportErrorsLink(id: string): Promise<ExportLinkDto> {
  return request(`/api/v1/imports/${encodeURIComponent(id)}/errors/links`, { method: "POST", body: "{}" });
}

/** The format a file's name says: `.csv` → csv, `.jsonl`/`.ndjson` → jsonl; null for anything else. */
export function formatOfName(name: string): ImportFormat | null {
  const ext = name.toLowerCase().split(".").pop() ?? "";
  if (ext === "csv") return "csv";
  if (ext === "jsonl" || ext === "ndjson") return "jsonl";
  return null;
}

/** The dataset a file's name names ("orders-1a2b3c4d.csv", an export of Conveyor's), or null. */
export function datasetOfName(name: string): (typeof IMPORT_DATASETS)[number] | null {
  const lower = name.toLowerCase();
  return IMPORT_DATASETS.find((d) => lower.includes(d)) ?? null;
}

/** Why a file cannot be imported, in words, or null when it may be sent. */
export function fileProblem(file: { name: string; size: number }): string | null {
  if (!formatOfName(file.name)) {
    return `“${file.name}” is not a CSV (.csv) or JSON Lines (.jsonl, .ndjson) file.`;
  }
  if (file.size === 0) return `“${file.name}” is empty.`;
  if (file.size > MAX_UPLOAD_BYTES) {
    return `“${file.name}” is ${formatBytes(file.size)}; a file may be at most 2 GB (2 GiB).`;
  }
  return null;
}

/** The stage an open import is at (1-based), or where it stopped; the number of stages. */
export function currentStage(imp: Pick<ImportDto, "stages">): { index: number; of: number; stage: ImportStageDto } {
  const stages = imp.stages;
  const at = stages.findIndex((s) => s.status !== "succeeded");
  const index = at === -1 ? stages.length - 1 : at;
  return { index: index + 1, of: stages.length, stage: stages[index]! };
}

/** "Events · CSV · upsert": what an import brings in, and how. */
export function importName(request: Pick<ImportBody, "dataset" | "format" | "mode">): string {
  const dataset = request.dataset.charAt(0).toUpperCase() + request.dataset.slice(1);
  return `${dataset} · ${request.format === "jsonl" ? "JSON Lines" : "CSV"} · ${request.mode}`;
}

/** What a column holds, in words. */
const KIND_WORDS: Record<ColumnSpec["kind"], string> = {
  bigint: "whole number",
  text: "text",
  email: "email address",
  char2: "2-letter country code",
  char3: "3-letter currency code",
  money: "amount, up to 2 decimals",
  json: "JSON",
  time: "date and time (ISO 8601)",
};

/** A dataset's columns as the form lists them: name, what it holds, whether a row must have it. */
export function datasetColumns(dataset: string): { name: string; type: string; required: boolean }[] {
  const spec = importDatasets[dataset as keyof typeof importDatasets];
  if (!spec) return [];
  return spec.columns.map((c) => ({ name: c.name, type: KIND_WORDS[c.kind], required: Boolean(c.required) }));
}

/**
 * The bad rows that failed an import, when that is why it failed: it found more than it
 * allowed (read from its counts and request, not from its error's words); null otherwise.
 */
export function rejectedTooMany(imp: Pick<ImportDto, "job" | "counts" | "request">): number | null {
  const rejected = imp.counts.rejected;
  if (imp.job.status !== "failed" || rejected === null) return null;
  return rejected > imp.request.maxBadRows ? rejected : null;
}

/** The same import again, from the same upload (no file sent again), allowing `maxBadRows` bad rows. */
export function importAgain(imp: Pick<ImportDto, "request">, maxBadRows: number, idempotencyKey: string) {
  const { uploadId, dataset, format, mode } = imp.request;
  return createImport({ uploadId, dataset, format, mode, maxBadRows }, idempotencyKey);
}
