/**
 * Errors → Responses, in one place: AppError by its code, anything else a 500
 * with no internals in the body.
 */
import { AppError } from "../errors";

export function json(body: unknown, init?: ResponseInit): Response {
  return Response.json(body, init);
}

export function errorResponse(err: unknown): Response {
  if (err instanceof AppError) {
    return json(
      { error: { code: err.code, message: err.message, ...(err.fields ? { fields: err.fields } : {}) } },
      { status: err.status },
    );
  }
  console.error("[http] unhandled error:", err);
  return json({ error: { code: "internal", message: "Internal server error" } }, { status: 500 });
}
