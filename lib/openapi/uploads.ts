/**
 * Uploads (tus 1.0, lib/uploads: below the engine, used by imports), described (lib/api-doc.ts).
 * The checks at the end hold the response schemas to the types the routes return.
 */
import { z } from "zod";
import {
  authed,
  id,
  instant,
  jsonOf,
  locationHeader,
  noContent,
  nullableInstant,
  operation,
  type ApiDescription,
  type Out,
  type Ret,
  type Same,
} from "../api-doc";
import type { listUploads, toUploadDto } from "../uploads/service";

const uploadSchema = z
  .object({
    id: z.string(),
    filename: z.string(),
    contentType: z.string().nullable(),
    size: z.number(),
    received: z.number(),
    complete: z.boolean(),
    completedAt: nullableInstant,
    lastUsedAt: instant,
    importJobId: id.nullable(),
    createdAt: instant,
    url: z.string(),
  })
  .meta({ id: "Upload" });
const uploadListSchema = z.object({ uploads: z.array(uploadSchema) });

const tusHeaders = z.object({
  "Tus-Resumable": z.literal("1.0.0").meta({ description: "The tus protocol version" }),
});
const tus = "Resumable uploads, tus 1.0 (https://tus.io/protocols/resumable-upload): creation, termination";
const tags = ["Uploads"];

export const uploadOperations = {
  list: operation("get", "/api/v1/uploads", {
    tags,
    summary: "The tenant's uploads",
    responses: authed({ "200": jsonOf(uploadListSchema, "Its uploads, newest first") }),
  }),
  create: operation("post", "/api/v1/uploads", {
    tags,
    summary: "Create a resumable upload (tus creation)",
    description: `${tus}. Send \`Upload-Length\` and \`Upload-Metadata\` (filename, filetype).`,
    requestParams: {
      header: tusHeaders.extend({
        "Upload-Length": z.string().meta({ description: "The file's size in bytes" }),
        "Upload-Metadata": z.string().optional().meta({ description: "tus metadata: `filename <base64>,…`" }),
      }),
    },
    responses: authed(
      { "201": { description: "Created; `Location` is the upload's URL", headers: locationHeader } },
      400,
      413,
    ),
  }),
  discover: operation("options", "/api/v1/uploads", {
    tags,
    summary: "tus discovery: version, extensions, maximum size",
    security: [],
    responses: { "204": { description: "Tus-Version, Tus-Extension and Tus-Max-Size headers" } },
  }),
  get: operation("get", "/api/v1/uploads/{id}", {
    tags,
    summary: "One upload",
    requestParams: { path: z.object({ id: z.string().meta({ description: "The upload" }) }) },
    responses: authed({ "200": jsonOf(uploadSchema, "The upload") }, 404),
  }),
  offset: operation("head", "/api/v1/uploads/{id}", {
    tags,
    summary: "How much of the upload has arrived (tus: Upload-Offset)",
    requestParams: { path: z.object({ id: z.string() }), header: tusHeaders },
    responses: authed({ "200": { description: "`Upload-Offset` and `Upload-Length` headers, no body" } }, 404),
  }),
  send: operation("patch", "/api/v1/uploads/{id}", {
    tags,
    summary: "Send the next bytes (tus)",
    requestParams: {
      path: z.object({ id: z.string() }),
      header: tusHeaders.extend({ "Upload-Offset": z.string().meta({ description: "Where these bytes start" }) }),
    },
    requestBody: {
      required: true,
      content: { "application/offset+octet-stream": { schema: z.string().meta({ format: "binary" }) } },
    },
    responses: authed({ "204": { description: "Stored; `Upload-Offset` is the new offset" } }, 404, 409, 413),
  }),
  abandon: operation("delete", "/api/v1/uploads/{id}", {
    tags,
    summary: "Abandon an upload (tus termination)",
    requestParams: { path: z.object({ id: z.string() }), header: tusHeaders },
    responses: authed({ "204": noContent }, 404),
  }),
  discoverOne: operation("options", "/api/v1/uploads/{id}", {
    tags,
    summary: "tus discovery",
    security: [],
    requestParams: { path: z.object({ id: z.string() }) },
    responses: { "204": { description: "Tus-Version, Tus-Extension and Tus-Max-Size headers" } },
  }),
};

export const uploadsApi: ApiDescription = { tags: [{ name: "Uploads" }], operations: Object.values(uploadOperations) };

/** One entry per response schema; `tsc` reports the first that is not `true`. */
export const uploadSchemasMatchTheirTypes: {
  upload: Same<Out<typeof uploadSchema>, Ret<typeof toUploadDto>>;
  uploads: Same<Out<typeof uploadListSchema>, { uploads: Ret<typeof listUploads> }>;
} = { upload: true, uploads: true };
