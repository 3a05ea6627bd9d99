/**
 * What every stage of an import shares: the request and stage input schemas,
 * the stages' outputs, the retry policy, where the files live, and the
 * upload's reading.
 */
import { type Readable } from "node:stream";
import { z } from "zod";
import { pool } from "../db";
import { datasetNames } from "../tenants/datasets";
import { PermanentError } from "../jobs/errors";
import { type RetryPolicy } from "../jobs/task";
import { openUpload, touchUpload } from "../uploads/service";

export const IMPORT_RETRY: RetryPolicy = {
  maxAttempts: 3,
  initialBackoffMs: 1_000,
  maxBackoffMs: 30_000,
  multiplier: 4,
  jitter: "full",
};

/** How many bad rows an import keeps to show inline (all go to the errors file). */
export const SHOWN_BAD_ROWS = 20;

export const importRequestSchema = z
  .object({
    uploadId: z
      .string({ error: "must be the id of a finished upload" })
      .min(1, "must be the id of a finished upload")
      .max(200, "must be at most 200 characters"),
    dataset: z.enum(datasetNames, { error: `must be one of ${datasetNames.join(", ")}` }),
    format: z.enum(["csv", "jsonl"], { error: "must be csv or jsonl" }).default("csv"),
    mode: z.enum(["insert", "upsert"], { error: "must be insert or upsert" }).default("insert"),
    maxBadRows: z
      .number({ error: "must be a number" })
      .int("must be a whole number")
      .min(0, "must be at least 0")
      .max(1_000_000_000, "must be at most 1000000000")
      .default(0),
  })
  .strict();
export type ImportRequest = z.infer<typeof importRequestSchema>;

/** Every stage's input: the request, the import it belongs to, and what the stages before it made. */
export const stageInputSchema = z
  .object({
    importId: z.uuid(),
    jobId: z.uuid(),
    request: importRequestSchema,
    outputs: z.record(z.string(), z.unknown()).default({}),
  })
  .strict();
export type StageInput = z.infer<typeof stageInputSchema>;

export type ScanOutput = {
  size: number;
  sha256: string;
  encoding: "utf-8";
  format: "csv" | "jsonl";
  columns: string[];
  /** Records after the header (CSV) or lines (JSON Lines). */
  rows: number;
};
export type ParseOutput = {
  cleanKey: string;
  rowsRead: number;
  good: number;
  rejected: number;
  errorsKey: string;
  /** Rows read before this attempt started: a killed attempt's last checkpoint (0 from the start). */
  resumedFrom?: number;
};
/** Bytes `start`–`end` (inclusive) of the clean file `key`: rows `fromLine`–`toLine` of the upload. */
export type Chunk = {
  n: number;
  key: string;
  start: number;
  end: number;
  rows: number;
  fromLine: number;
  toLine: number;
};
export type ChunkOutput = { chunks: Chunk[]; rows: number };
export type LoadOutput = { stagingTable: string; rows: number; chunks: number };
export type CommitOutput = { inserted: number; updated: number; duplicates: number; committedAt: string };

export const filesOf = (tenantId: string, importId: string) => `${tenantId}/imports/${importId}`;

export const fmt = (n: number) => n.toLocaleString("en");

/** The unlogged table the load stage fills: `import_staging.i_<import id>`. */
export function stagingTableOf(importId: string): string {
  return `import_staging."i_${importId.replace(/-/g, "")}"`;
}

/** Marks the import as being run by `jobId` (a replay's job takes over) and keeps its upload from expiring. */
export async function follow(input: StageInput): Promise<void> {
  await pool().query("UPDATE imports SET job_id = $2 WHERE id = $1 AND job_id <> $2", [input.importId, input.jobId]);
  await touchUpload(input.request.uploadId);
}

/** Reads the upload (from byte `start`), or fails the stage for good: it was removed. */
export async function upload(uploadId: string, start = 0): Promise<{ stream: Readable; size: number }> {
  try {
    return await openUpload(uploadId, start);
  } catch (err) {
    throw new PermanentError(`The upload ${uploadId} can no longer be read: ${(err as Error).message}`);
  }
}
