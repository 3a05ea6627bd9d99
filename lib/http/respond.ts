/**
 * Errors → Responses, in one place: AppError by its code, anything else a 500
 * with no internals in the body.
 */
import { AppError } from "../errors";
import { logger } from "../log";

export function json(body: unknown, init?: ResponseInit): Response {
  return Response.json(body, init);
}

/**
 * The SQLSTATE of a database error, however it arrived: straight from pg, or
 * wrapped by Prisma (a raw query's error, or a driver adapter's `cause`).
 */
function sqlState(err: unknown): string | undefined {
  const seen = new Set<unknown>();
  const queue: unknown[] = [err];
  while (queue.length) {
    const e = queue.shift() as Record<string, unknown> | undefined;
    if (!e || typeof e !== "object" || seen.has(e)) continue;
    seen.add(e);
    for (const key of ["code", "originalCode"]) {
      const v = e[key];
      // (Prisma's own codes, P1000–P3999, are not SQLSTATEs; PL/pgSQL's P0001 is.)
      if (typeof v === "string" && /^[0-9A-Z]{5}$/.test(v) && !/^P[1-9]/.test(v)) return v;
    }
    const meta = e.meta as Record<string, unknown> | undefined;
    queue.push(e.cause, meta?.driverAdapterError, meta?.cause);
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
      {
        error: {
          code: err.code,
          message: err.message,
          ...(err.fields ? { fields: err.fields } : {}),
          ...(err.extras.details ? { details: err.extras.details } : {}),
        },
      },
      { status: err.status, headers: err.extras.headers },
    );
  }
  logger.error({ err }, "[http] unhandled error");
  return json({ error: { code: "internal", message: "Internal server error" } }, { status: 500 });
}
