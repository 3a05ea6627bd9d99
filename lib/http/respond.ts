/**
 * Errors → Responses, in one place: AppError by its code, anything else a 500
 * with no internals in the body.
 */
import { AppError } from "../errors";

export function json(body: unknown, init?: ResponseInit): Response {
  return Response.json(body, init);
}

/**
 * The SQLSTATE of a database error, however it arrived: straight from pg, or
 * wrapped by Prisma (a raw query's error, or a driver adapter's `cause`).
 */
function sqlState(err: unknown): string | undefined {
  for (let e = err as Record<string, unknown> | undefined, depth = 0; e && depth < 4; depth++) {
    const code = e.code;
    if (typeof code === "string" && /^[0-9A-Z]{5}$/.test(code)) return code;
    const meta = e.meta as Record<string, unknown> | undefined;
    if (typeof meta?.code === "string") return meta.code;
    const original = (e.cause as Record<string, unknown> | undefined)?.originalCode;
    if (typeof original === "string") return original;
    e = e.cause as Record<string, unknown> | undefined;
  }
  return undefined;
}

export function errorResponse(err: unknown): Response {
  // The lifecycle guard refused a status change (a job moved on meanwhile, e.g. it
  // finished while an operator acted on it): a conflict to retry, not a server error.
  if (!(err instanceof AppError) && sqlState(err) === "23514") {
    return json(
      { error: { code: "conflict", message: "The job changed meanwhile; reload it and try again" } },
      { status: 409 },
    );
  }
  if (err instanceof AppError) {
    return json(
      { error: { code: err.code, message: err.message, ...(err.fields ? { fields: err.fields } : {}) } },
      { status: err.status },
    );
  }
  console.error("[http] unhandled error:", err);
  return json({ error: { code: "internal", message: "Internal server error" } }, { status: 500 });
}
