/**
 * How a part of lib/ describes the HTTP operations it serves, for the OpenAPI
 * document (lib/openapi/document.ts assembles it) and for the server `npm start`
 * runs (a hot route's path template is its direct-route matcher,
 * lib/http/sse-direct-routes.ts). An operation is declared once, with the zod
 * schemas its route parses with and answers with: the engine's in its own
 * folder (lib/jobs/openapi.ts) or lib/openapi, a workload's in its folder's
 * `openapi.ts`, handed to the engine in its manifest's `openapi` field.
 *
 * Base layer: it imports only zod and zod-openapi's types, so every layer
 * (the engine, each workload) may describe itself with it.
 */
import { z } from "zod";
import type {
  ZodOpenApiOperationObject,
  ZodOpenApiPathsObject,
  ZodOpenApiResponseObject,
  ZodOpenApiResponsesObject,
} from "zod-openapi";

export type HttpMethod = "get" | "post" | "put" | "patch" | "delete" | "head" | "options";

/**
 * A hot route the server `npm start` runs answers itself, without Next.js's wrapping, once its
 * route module is loaded: `api` a plain answer (lib/http/api-direct.ts), `stream` an event stream
 * onto the socket (lib/http/sse-direct.ts). `public`: served without a Bearer token too (it reads no cookie).
 */
export type DirectServing = { kind: "api" | "stream"; public?: boolean };

/** One operation: its method, its path template (`/api/v1/jobs/{id}`, as the document spells it) and its description. */
export type ApiOperation<M extends HttpMethod = HttpMethod, P extends string = string> = {
  method: M;
  path: P;
  spec: ZodOpenApiOperationObject;
  direct?: DirectServing;
};

type ParamNames<P extends string> = P extends `${string}{${infer N}}${infer Rest}` ? N | ParamNames<Rest> : never;
/** A path template's parameters: `/api/v1/jobs/{id}` → `{ id: string }` (none: a route's empty params). */
export type PathParams<P extends string> = [ParamNames<P>] extends [never]
  ? Record<string, never>
  : { [K in ParamNames<P>]: string };

/** What a workload (or the engine) adds to the API's description: its tags and its operations. */
export type ApiDescription = {
  tags: readonly { name: string; description?: string }[];
  operations: readonly ApiOperation[];
};

/** Declares an operation; the literal path is kept, so a hot route's parameters are typed from it. */
export function operation<const M extends HttpMethod, const P extends string>(
  method: M,
  path: P,
  spec: ZodOpenApiOperationObject,
  opts: { direct?: DirectServing } = {},
): ApiOperation<M, P> {
  return { method, path, spec, ...opts };
}

/** The operations as OpenAPI paths; a method declared twice for one path is an error (two owners of a route). */
export function pathsOf(operations: readonly ApiOperation[]): ZodOpenApiPathsObject {
  const paths: ZodOpenApiPathsObject = {};
  for (const op of operations) {
    const item = (paths[op.path] ??= {});
    if (item[op.method]) throw new Error(`${op.method.toUpperCase()} ${op.path} is described twice`);
    item[op.method] = op.spec;
  }
  return paths;
}

// ── Values every description shares ────────────────────────────────────────

export const instant = z.iso.datetime({ offset: true });
export const nullableInstant = instant.nullable();
export const id = z.string().meta({ description: "A UUID" });
export const cursorPage = {
  nextCursor: z.string().nullable().meta({ description: "Pass as ?cursor= for the next page" }),
};

/** The one error envelope every route answers with (lib/http/respond.ts). */
export const errorBodySchema = z
  .object({
    error: z.object({
      code: z
        .enum([
          "invalid_input",
          "unauthorized",
          "forbidden",
          "not_found",
          "conflict",
          "gone",
          "payload_too_large",
          "rate_limited",
          "quota_exceeded",
          "internal",
        ])
        .meta({ description: "lib/errors.ts: each code has one HTTP status" }),
      message: z.string(),
      fields: z
        .array(z.object({ path: z.string(), message: z.string() }))
        .optional()
        .meta({ description: "Each failing field of a 400, by its path (`filter.to`, `(body)`)" }),
      details: z
        .record(z.string(), z.unknown())
        .optional()
        .meta({ description: "Beside the message: a quota's name, limit and use; a wait in seconds" }),
    }),
  })
  .meta({ id: "Error" });

// ── Answers ────────────────────────────────────────────────────────────────

type Responses = ZodOpenApiResponsesObject & Record<string, ZodOpenApiResponseObject>;
type Answer = ZodOpenApiResponseObject;

export const jsonOf = (schema: z.ZodType, description: string): Answer => ({
  description,
  content: { "application/json": { schema } },
});
export const noContent: Answer = { description: "Done; no body" };

const errorOf = (description: string): Answer => jsonOf(errorBodySchema, description);

export const locationHeader = z.object({ Location: z.string().meta({ description: "The URL of what was made" }) });
/** An answer to a request that took an `Idempotency-Key`: the job's URL, and whether an earlier request made it. */
export const replayableHeaders = locationHeader.extend({
  "Idempotent-Replayed": z
    .literal("true")
    .optional()
    .meta({ description: "Present when an earlier request with the same Idempotency-Key made the job" }),
});
/** An answer that made something: its URL in `Location`. */
export const created = (schema: z.ZodType, description: string): Answer => ({
  ...jsonOf(schema, description),
  headers: locationHeader,
});
const errors = {
  400: errorOf("Invalid input: `error.fields` names each failing field"),
  401: errorOf("Not signed in, or the token is unknown, expired or revoked"),
  403: errorOf("Signed in, but the role (or a read-only token) does not allow it"),
  404: errorOf("Not found — also another tenant's: never 403, never its data"),
  409: errorOf("The resource is not in a state that allows it (e.g. the job already finished)"),
  410: errorOf("Gone: expired or revoked"),
  413: errorOf("The body is larger than MAX_BODY_BYTES"),
  429: {
    ...errorOf("Rate limited, or a quota is used up (`details` names it)"),
    headers: z.object({ "Retry-After": z.string().optional().meta({ description: "Seconds to wait" }) }),
  },
} as const;
type ErrorStatus = keyof typeof errors;

/** Success responses, the errors named, and `default`: any other failure has the same envelope. */
export function answers(ok: Responses, ...codes: ErrorStatus[]): Responses {
  const out: Responses = { ...ok };
  for (const code of codes) out[String(code)] = errors[code];
  out.default = errorOf("Any other failure (a 500 says no more than `internal`)");
  return out;
}

/** A signed-in caller's answers: 401, 403 and 429 may come from any such route. */
export const authed = (ok: Responses, ...codes: ErrorStatus[]) => answers(ok, 401, 403, 429, ...codes);

export const sseResponse = (what: string): Answer => ({
  description:
    `${what}. Each event's \`id\` is the job's sequence number and its \`data\` a JSON job event ` +
    "(jobId, seq, type, status, attempts, done, total, unit, stage, message, bytes, children, cancelRequested, " +
    "admission, at); comment lines keep the connection alive.",
  content: { "text/event-stream": { schema: z.string() } },
});

export const fileDownload = (what: string): Answer => ({
  description: `${what} (Content-Disposition: attachment; never cached)`,
  content: { "application/octet-stream": { schema: z.string().meta({ format: "binary" }) } },
});

// ── Requests ───────────────────────────────────────────────────────────────

export const uuid = (what: string) =>
  z.string().meta({ description: what, example: "0f8b6a52-8f0e-4b8e-9d7c-5b1d2a3c4e5f" });
export const idPath = (what: string) => z.object({ id: uuid(what) });
export const tenantQuery = z.object({
  tenant: z.string().optional().meta({ description: "Platform admins: a tenant's slug (or id) to narrow to" }),
});

export const body = (schema: z.ZodType, required = true) => ({
  required,
  content: { "application/json": { schema } },
});

// ── A response schema held to the type its function returns ─────────────────

/** True when A and B are assignable both ways (the schema neither lacks nor adds a field). */
export type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
export type Out<S extends z.ZodType> = z.output<S>;
export type Ret<F extends (...args: never[]) => unknown> = Awaited<ReturnType<F>>;
