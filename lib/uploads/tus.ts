/**
 * The tus 1.0 server of /api/v1/uploads (@tus/server, its web-standard
 * handler): creation (POST), offset (HEAD), bytes (PATCH), termination
 * (DELETE), discovery (OPTIONS). Around it, this module keeps the protocol
 * honest for a multi-tenant API: the caller is authenticated first (by the
 * route's wrapper), an upload of another tenant answers 404 before tus sees
 * the request, a creation is checked (declared length within
 * UPLOAD_MAX_BYTES, a filename, the tenant's storage quota) and recorded in
 * `uploads`, progress and completion are recorded as bytes arrive, and every
 * error answers with tus's status code and the API's JSON error body.
 *
 * Locks: tus serialises requests on one upload with a lock; ours is a lease in
 * Postgres (./locker.ts), so it holds across every app process behind a
 * balancer, with no sticky routing.
 */
import { randomBytes } from "node:crypto";
import { EVENTS, Server, type Upload } from "@tus/server";
import { requireTenant } from "../auth/authorize";
import type { Principal } from "../auth/principal";
import { env } from "../env";
import { AppError, notFound } from "../errors";
import {
  createUploadRow,
  isUploadId,
  markCompleted,
  markDeleted,
  recordProgress,
  removeUpload,
  uploadForRequest,
} from "./service";
import { PostgresLocker } from "./locker";
import { resetUploadStore, uploadStore } from "./store";
import { logger } from "../log";

/** The route the tus server answers; Locations are relative to the host: `/api/v1/uploads/<id>`. */
export const UPLOADS_PATH = "/api/v1/uploads";
export const TUS_VERSION = "1.0.0";
/** How often bytes arriving in a long PATCH are recorded (received, last use), in ms. */
const PROGRESS_INTERVAL_MS = 2_000;

type RequestState = { principal: Principal; tenantId: string; error?: AppError; createdId?: string };
/** What a request's hooks need (its principal) and leave behind (a refusal, the id it created). */
const requests = new WeakMap<Request, RequestState>();

let server: Server | undefined;

function tusServer(): Server {
  if (server) return server;
  const s = new Server({
    path: UPLOADS_PATH,
    datastore: uploadStore(),
    maxSize: () => env().UPLOAD_MAX_BYTES,
    // `/api/v1/uploads/<id>`: right behind any proxy, and tus clients resolve it against the endpoint.
    relativeLocation: true,
    // 24 random bytes: unguessable, URL-safe.
    namingFunction: () => randomBytes(24).toString("base64url"),
    getFileIdFromRequest: (req) => {
      const last = new URL(req.url).pathname.split("/").pop();
      return last && isUploadId(last) ? last : undefined;
    },
    // Same origin only, like the rest of the API: no Access-Control-Allow-Origin.
    allowedOrigins: () => false,
    postReceiveInterval: PROGRESS_INTERVAL_MS,
    // One upload's requests take turns fleet-wide, not only within this process.
    locker: new PostgresLocker(),
    async onUploadCreate(req, upload) {
      const state = requests.get(req as unknown as Request);
      if (!state) throw new AppError("internal", "an upload request without its principal");
      const filename = upload.metadata?.filename?.trim();
      if (!filename) {
        throw invalidHeader(
          "Upload-Metadata.filename",
          "is required: the file's name, base64-encoded (Upload-Metadata: filename <base64>)",
        );
      }
      if (filename.length > 255) throw invalidHeader("Upload-Metadata.filename", "must be at most 255 characters");
      const filetype = upload.metadata?.filetype?.trim() || null;
      if (filetype && filetype.length > 255) {
        throw invalidHeader("Upload-Metadata.filetype", "must be at most 255 characters");
      }
      await createUploadRow(state.principal, {
        id: upload.id,
        filename,
        contentType: filetype,
        size: upload.size ?? 0,
      });
      state.createdId = upload.id;
      return {};
    },
    async onUploadFinish(_req, upload) {
      await markCompleted(upload.id);
      return {};
    },
    onResponseError(req, err) {
      if (err instanceof AppError) {
        const state = requests.get(req as unknown as Request);
        if (state) state.error = err;
        return { status_code: err.status, body: err.message };
      }
      // tus's own refusals carry their status; anything else is a bug or a storage failure.
      if (!("status_code" in err)) logger.error({ err }, `[uploads] ${req.method} ${new URL(req.url).pathname} failed`);
      return undefined;
    },
  });
  s.on(EVENTS.POST_RECEIVE, (_req: unknown, upload: Upload) => {
    recordProgress(upload.id, upload.offset).catch((err: Error) =>
      logger.error(
        { err, uploadId: upload.id },
        `[uploads] could not record the progress of ${upload.id}: ${err.message}`,
      ),
    );
  });
  server = s;
  return s;
}

/** Forgets the server and its store, so the next request follows the configuration again (tests). */
export function resetUploadServer(): void {
  server = undefined;
  resetUploadStore();
}

function invalidHeader(path: string, message: string): AppError {
  return new AppError("invalid_input", `Invalid input: ${path}: ${message}`, [{ path, message }]);
}

/** Checks a creation's headers before tus does, to refuse with the API's words. */
function checkCreation(req: Request): void {
  if (req.headers.has("upload-defer-length")) {
    throw invalidHeader(
      "Upload-Length",
      "is required: declare the file's size (deferred lengths, Upload-Defer-Length, are not taken)",
    );
  }
  const raw = req.headers.get("upload-length");
  const length = Number(raw);
  if (raw === null || !/^\d+$/.test(raw) || !Number.isSafeInteger(length)) {
    throw invalidHeader("Upload-Length", "is required: the file's size in bytes, a whole number");
  }
  const max = env().UPLOAD_MAX_BYTES;
  if (length > max) {
    throw new AppError(
      "payload_too_large",
      `Invalid input: Upload-Length: must be at most ${max} bytes (UPLOAD_MAX_BYTES); this upload declares ${length}`,
      [{ path: "Upload-Length", message: `must be at most ${max} bytes` }],
      { details: { limit: max, declared: length } },
    );
  }
}

/**
 * Answers a tus request (POST, HEAD, PATCH, DELETE) of an authenticated
 * principal; `id` is the upload id of the URL (none for the creation's POST).
 * Throws AppError for refusals before tus (the route maps it); tus's own
 * refusals come back as responses with the API's error body.
 */
export async function handleTusRequest(req: Request, principal: Principal, id: string | undefined): Promise<Response> {
  const tenantId = requireTenant(principal);
  const resumable = req.headers.get("tus-resumable");
  if (resumable !== TUS_VERSION) {
    // 412 with the versions this server speaks, as the protocol says.
    const message = resumable
      ? `Tus-Resumable ${resumable} is not supported; this server speaks tus ${TUS_VERSION}`
      : `Tus-Resumable: ${TUS_VERSION} is required on every tus request`;
    return Response.json(
      {
        error: {
          code: "invalid_input",
          message,
          fields: [{ path: "Tus-Resumable", message: `must be ${TUS_VERSION}` }],
        },
      },
      { status: 412, headers: { "Tus-Version": TUS_VERSION } },
    );
  }
  if (req.method === "POST") {
    if (id !== undefined) throw notFound("Create uploads with POST /api/v1/uploads");
    checkCreation(req);
  } else {
    if (id === undefined) throw notFound(`${req.method} needs an upload's URL: /api/v1/uploads/{id}`);
    await uploadForRequest(tenantId, id, req.method); // 404: none of this tenant; 409: an import took it
    // Marked first: from this moment no import can claim it, then tus removes the bytes.
    if (req.method === "DELETE") await markDeleted(tenantId, id);
  }

  const state: RequestState = { principal, tenantId };
  requests.set(req, state);
  const res = await tusServer().handleWeb(req);

  if (state.error) {
    if (state.createdId) await removeUpload(state.createdId).catch(() => {});
    throw state.error;
  }
  if (res.status >= 400) {
    // A creation whose bytes could not be stored leaves no row behind.
    if (state.createdId) await removeUpload(state.createdId).catch(() => {});
    // Termination of an upload whose bytes were already gone: the row is deleted, which is what was asked.
    if (req.method === "DELETE" && res.status === 404) {
      return new Response(null, { status: 204, headers: { "Tus-Resumable": TUS_VERSION } });
    }
    return tusErrorResponse(req, res);
  }
  const offset = res.headers.get("upload-offset");
  const uploadId = id ?? state.createdId;
  if (offset !== null && uploadId) await recordProgress(uploadId, Number(offset));
  return res;
}

/** tus-node-server's plain-text refusals as the API's JSON errors, with the protocol's status codes. */
async function tusErrorResponse(req: Request, res: Response): Promise<Response> {
  const text = (await res.text()).trim();
  let status = res.status;
  let message = text;
  // tus-node-server answers 403 for a missing header and 400 for a wrong Content-Type; the protocol says:
  if (/^Content-Type header required|^Invalid content-type$/i.test(text)) {
    status = 415;
    message = "PATCH needs Content-Type: application/offset+octet-stream";
  } else if (/^Upload-Offset header required/i.test(text)) {
    status = 400;
  } else if (/lock/i.test(text) && status === 500) {
    status = 423;
    message = "Another request is writing this upload; try again in a moment (HEAD gives the offset)";
  } else if (/^Upload-Offset conflict/i.test(text)) {
    message = "Upload-Offset does not match the bytes received; send HEAD for the offset and resume from there";
  }
  const headers = new Headers(res.headers);
  headers.delete("content-length");
  headers.delete("connection");
  if (status >= 500) {
    logger.error(`[uploads] ${req.method} ${new URL(req.url).pathname} answered ${status}: ${text}`);
    return Response.json({ error: { code: "internal", message: "Internal server error" } }, { status, headers });
  }
  return Response.json({ error: { code: codeFor(status), message } }, { status, headers });
}

function codeFor(status: number): string {
  switch (status) {
    case 404:
      return "not_found";
    case 409:
      return "conflict";
    case 410:
      return "gone";
    case 413:
      return "payload_too_large";
    case 423:
      return "locked";
    case 501:
      return "not_implemented";
    default:
      return "invalid_input";
  }
}

/** OPTIONS (tus discovery): versions, extensions and the largest upload. No sign-in. */
export async function handleTusOptions(req: Request): Promise<Response> {
  return tusServer().handleWeb(req);
}

/** For the route: every answer of the uploads route carries `Tus-Resumable`, refusals made before tus too. */
export function withTusHeaders<A extends unknown[]>(
  handler: (req: Request, ...rest: A) => Promise<Response>,
): (req: Request, ...rest: A) => Promise<Response> {
  return async (req, ...rest) => {
    const res = await handler(req, ...rest);
    try {
      if (!res.headers.has("tus-resumable")) res.headers.set("Tus-Resumable", TUS_VERSION);
    } catch {
      /* an immutable response: as it is */
    }
    return res;
  };
}
