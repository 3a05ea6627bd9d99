/**
 * The imports workload's API, described (lib/api-doc.ts): importing a finished upload, its imports,
 * its errors file and that file's links. Handed to the engine in its manifest (./index.ts, `openapi`);
 * lib/openapi/document.ts assembles. (Uploads, below the engine, are described in lib/openapi/uploads.ts.)
 */
import { z } from "zod";
import {
  authed,
  body,
  fileDownload,
  id,
  idPath,
  instant,
  jsonOf,
  nullableInstant,
  operation,
  replayableHeaders,
  type ApiDescription,
  type Out,
  type Ret,
  type Same,
} from "../api-doc";
import { createLinkSchema } from "../files/links";
import { linkSchema } from "../files/openapi";
import { jobSchema } from "../jobs/openapi";
import type { createImportErrorsLink, getImport, listImports, requestImport } from "./service";
import { addPriorityProperty } from "../jobs/priority";
import { importRequestSchema } from "./stages";

const dataset = z.enum(["customers", "orders", "events"]);

const importSchema = z
  .object({
    job: jobSchema,
    importId: id,
    request: z.object({
      uploadId: z.string(),
      dataset,
      format: z.enum(["csv", "jsonl"]),
      mode: z.enum(["insert", "upsert"]),
      maxBadRows: z.number().int(),
    }),
    fileName: z.string().nullable(),
    file: z.object({ size: z.number(), sha256: z.string(), rows: z.number(), columns: z.array(z.string()) }).nullable(),
    counts: z.object({
      rowsRead: z.number().nullable(),
      inserted: z.number().nullable(),
      updated: z.number().nullable(),
      rejected: z.number().nullable(),
      duplicates: z.number().nullable(),
    }),
    badRows: z.array(z.object({ line: z.number().int(), column: z.string(), reason: z.string() })),
    errorsFile: z.object({ size: z.number(), rows: z.number(), expiresAt: instant, url: z.string() }).nullable(),
    stages: z.array(
      z.object({
        name: z.string(),
        type: z.string(),
        status: z.string(),
        attempts: z.number().int(),
        startedAt: nullableInstant,
        finishedAt: nullableInstant,
        error: z.string().nullable(),
        jobId: id.nullable(),
        progress: z.object({
          done: z.number(),
          total: z.number().nullable(),
          unit: z.string().nullable(),
          message: z.string().nullable(),
          stage: z.string().nullable(),
          detail: z.record(z.string(), z.unknown()).nullable(),
          samples: z
            .array(z.tuple([z.number(), z.number()]))
            .nullable()
            .meta({ description: "The running stage's recent [ms, done] samples, for its rate" }),
        }),
      }),
    ),
  })
  .meta({ id: "Import" });
const importListSchema = z.object({ imports: z.array(importSchema) });

export const importOperations = {
  list: operation("get", "/api/v1/imports", {
    tags: ["Imports"],
    summary: "The tenant's imports, newest first",
    requestParams: {
      query: z.object({
        limit: z.number().int().min(1).max(100).optional().meta({ description: "Default 50" }),
        status: z
          .enum(["scheduled", "queued", "running", "retrying", "succeeded", "failed", "cancelled", "expired"])
          .optional()
          .meta({ description: "Only the imports whose job has this status" }),
      }),
    },
    responses: authed({ "200": jsonOf(importListSchema, "Its imports") }),
  }),
  create: operation("post", "/api/v1/imports", {
    tags: ["Imports"],
    summary: "Import a finished upload into the tenant's data",
    requestParams: {
      header: z.object({
        "Idempotency-Key": z.string().optional().meta({ description: "A repeat with the same key answers the first" }),
      }),
    },
    requestBody: body(importRequestSchema.meta({ override: addPriorityProperty })),
    responses: authed(
      {
        "202": {
          ...jsonOf(jobSchema, "The queued import job (Location: the import's URL)"),
          headers: replayableHeaders,
        },
      },
      400,
      413,
    ),
  }),
  get: operation("get", "/api/v1/imports/{id}", {
    tags: ["Imports"],
    summary: "An import: its job, stages, counts, first bad rows and errors file",
    requestParams: { path: idPath("The import job") },
    responses: authed({ "200": jsonOf(importSchema, "The import") }, 404),
  }),
  errors: operation("get", "/api/v1/imports/{id}/errors", {
    tags: ["Imports"],
    summary: "The import's errors file (CSV: line, column, reason, value)",
    requestParams: { path: idPath("The import job") },
    responses: authed({ "200": fileDownload("The errors file") }, 404, 410),
  }),
  errorsLink: operation("post", "/api/v1/imports/{id}/errors/links", {
    tags: ["Imports"],
    summary: "A short-lived download link to the errors file",
    requestParams: { path: idPath("The import job") },
    requestBody: body(createLinkSchema),
    responses: authed({ "201": jsonOf(linkSchema, "The link, with its `url`") }, 400, 404, 409),
  }),
};

export const importsApi: ApiDescription = { tags: [{ name: "Imports" }], operations: Object.values(importOperations) };

/** One entry per response schema; `tsc` reports the first that is not `true`. */
export const importSchemasMatchTheirTypes: {
  link: Same<Out<typeof linkSchema>, Ret<typeof createImportErrorsLink>>;
  importJob: Same<Out<typeof jobSchema>, Ret<typeof requestImport>["job"]>;
  import: Same<Out<typeof importSchema>, Ret<typeof getImport>>;
  imports: Same<Out<typeof importListSchema>, { imports: Ret<typeof listImports> }>;
} = { link: true, importJob: true, import: true, imports: true };
