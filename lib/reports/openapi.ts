/**
 * The reports workload's API, described (lib/api-doc.ts): requesting a report, reading it, and
 * its file. Handed to the engine in its manifest (./index.ts, `openapi`).
 */
import { z } from "zod";
import {
  authed,
  body,
  fileDownload,
  idPath,
  jsonOf,
  operation,
  type ApiDescription,
  type Out,
  type Ret,
  type Same,
} from "../api-doc";
import { jobSchema } from "../jobs/openapi";
import { addPriorityProperty } from "../jobs/priority";
import { reportRequestSchema } from "./schema";
import type { getReport } from "./service";

const reportBodySchema = reportRequestSchema.meta({ id: "ReportRequest", override: addPriorityProperty });

export const reportSchema = z
  .object({
    job: jobSchema,
    report: z
      .object({
        from: z.string(),
        to: z.string(),
        total: z.number().int().meta({ description: "Jobs created in the window" }),
        rows: z.array(z.object({ type: z.string(), status: z.string(), count: z.number().int() })),
        downloadUrl: z.string(),
      })
      .nullable()
      .meta({ description: "Once the report's job succeeded: its counts and its file; null before" }),
  })
  .meta({ id: "Report" });

export const reportOperations = {
  create: operation("post", "/api/v1/reports", {
    tags: ["Reports"],
    summary: "Request a report of the tenant's jobs created in a window, counted by type and status",
    description: "Answers at once with the queued job; `GET /api/v1/reports/{id}` gives the counts once it succeeded.",
    requestBody: body(reportBodySchema),
    responses: authed({ "202": jsonOf(jobSchema, "The queued report job") }, 400),
  }),
  get: operation("get", "/api/v1/reports/{id}", {
    tags: ["Reports"],
    summary: "A report's job, and once it succeeded its counts and download URL",
    requestParams: { path: idPath("The report job") },
    responses: authed({ "200": jsonOf(reportSchema, "The report") }, 404),
  }),
  download: operation("get", "/api/v1/reports/{id}/download", {
    tags: ["Reports"],
    summary: "Download a report's file (JSON or CSV)",
    requestParams: { path: idPath("The report job") },
    responses: authed({ "200": fileDownload("The file") }, 404, 409, 410),
  }),
};

export const reportsApi: ApiDescription = { tags: [{ name: "Reports" }], operations: Object.values(reportOperations) };

/** One entry per response schema; `tsc` reports the first that is not `true`. */
export const reportSchemasMatchTheirTypes: {
  report: Same<Out<typeof reportSchema>, Ret<typeof getReport>>;
} = { report: true };
