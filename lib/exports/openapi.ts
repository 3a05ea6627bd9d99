/**
 * The exports workload's API, described (lib/api-doc.ts): requesting an export, deleting it, its
 * download and its short-lived links. Handed to the engine in its manifest (./index.ts, `openapi`);
 * lib/openapi/document.ts assembles. `create` is a hot route (direct).
 */
import { z } from "zod";
import {
  authed,
  body,
  fileDownload,
  idPath,
  jsonOf,
  noContent,
  operation,
  replayableHeaders,
  uuid,
  type ApiDescription,
  type Out,
  type Ret,
  type Same,
} from "../api-doc";
import { createLinkSchema } from "../files/links";
import { linkListSchema, linkSchema } from "../files/openapi";
import { jobSchema } from "../jobs/openapi";
import type { listExportLinks } from "./links";
import { addPriorityProperty } from "../jobs/priority";
import { exportRequestSchema } from "./schema";
import type { requestExport } from "./service";

// A POST /api/v1/exports body may carry `runAt` and `priority` beside the export request (lib/exports/service.ts splits it off).
const exportBodySchema = exportRequestSchema.meta({
  id: "ExportRequest",
  override: (ctx) => {
    const properties = (ctx.jsonSchema.properties ??= {});
    properties.runAt = {
      type: ["string", "null"],
      description: "Start no earlier than this (ISO 8601, at most a year ahead): the job waits as `scheduled`",
    };
    addPriorityProperty(ctx);
  },
});

export const exportOperations = {
  create: operation(
    "post",
    "/api/v1/exports",
    {
      tags: ["Exports"],
      summary: "Request an export of the tenant's data",
      description: "Answers at once with the queued job; follow it at `/api/v1/jobs/{id}` or its events.",
      requestParams: {
        header: z.object({
          "Idempotency-Key": z
            .string()
            .optional()
            .meta({ description: "1–200 characters: a repeat with the same key answers the first job" }),
        }),
      },
      requestBody: body(exportBodySchema),
      responses: authed(
        {
          "202": {
            ...jsonOf(jobSchema, "The queued export job"),
            headers: replayableHeaders,
          },
        },
        400,
        413,
      ),
    },
    { direct: { kind: "api" } },
  ),
  delete: operation("delete", "/api/v1/exports/{id}", {
    tags: ["Exports"],
    summary: "Delete an export's files before they expire (the job shows expired)",
    requestParams: { path: idPath("The export job") },
    responses: authed({ "204": noContent }, 404, 409),
  }),
  download: operation("get", "/api/v1/exports/{id}/download", {
    tags: ["Exports"],
    summary: "Download an export's file",
    requestParams: { path: idPath("The export job") },
    responses: authed({ "200": fileDownload("The file") }, 404, 409, 410),
  }),
  links: operation("get", "/api/v1/exports/{id}/links", {
    tags: ["Exports"],
    summary: "The export's download links with their download counts",
    requestParams: { path: idPath("The export job") },
    responses: authed({ "200": jsonOf(linkListSchema, "Its links, newest first") }, 404),
  }),
  createLink: operation("post", "/api/v1/exports/{id}/links", {
    tags: ["Exports"],
    summary: "A new short-lived download link (no sign-in needed to use it)",
    requestParams: { path: idPath("The export job") },
    requestBody: body(createLinkSchema, false),
    responses: authed({ "201": jsonOf(linkSchema, "The link, with its `url` (shown this once)") }, 400, 404, 409),
  }),
  revokeLink: operation("delete", "/api/v1/exports/{id}/links/{linkId}", {
    tags: ["Exports"],
    summary: "Revoke a download link at once",
    requestParams: { path: z.object({ id: uuid("The export job"), linkId: uuid("The link") }) },
    responses: authed({ "204": noContent }, 404),
  }),
};

export const exportsApi: ApiDescription = { tags: [{ name: "Exports" }], operations: Object.values(exportOperations) };

/** One entry per response schema; `tsc` reports the first that is not `true`. */
export const exportSchemasMatchTheirTypes: {
  links: Same<Out<typeof linkListSchema>, { links: Ret<typeof listExportLinks> }>;
  exportJob: Same<Out<typeof jobSchema>, Ret<typeof requestExport>["job"]>;
} = { links: true, exportJob: true };
