/**
 * AppError and its codes: the one vocabulary of failures that lib/ raises and
 * lib/http/respond.ts maps to HTTP statuses.
 */
import { ZodError } from "zod";

export const errorStatus = {
  invalid_input: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  gone: 410,
  payload_too_large: 413,
  /** A rate limit or the sign-in throttle: try again after `Retry-After`. */
  rate_limited: 429,
  /** A quota is used up: `details` names it, its limit and the current use. */
  quota_exceeded: 429,
  internal: 500,
} as const;

export type ErrorCode = keyof typeof errorStatus;

export type FieldError = { path: string; message: string };

export type AppErrorExtras = {
  /** Data for the client beside the message (a quota's name, limit and use). */
  details?: Record<string, unknown>;
  /** Response headers (Retry-After, RateLimit…). */
  headers?: Record<string, string>;
};

export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly fields?: FieldError[],
    readonly extras: AppErrorExtras = {},
  ) {
    super(message);
    this.name = "AppError";
  }

  get status(): number {
    return errorStatus[this.code];
  }
}

export const notFound = (what = "Not found") => new AppError("not_found", what);

/** Turns a ZodError into an AppError naming every failing field path. */
export function invalidInput(error: ZodError, prefix?: string): AppError {
  const fields = error.issues.map((issue) => ({
    path: [prefix, ...issue.path.map(String)].filter(Boolean).join(".") || "(body)",
    message: issue.message,
  }));
  const summary = fields.map((f) => `${f.path}: ${f.message}`).join("; ");
  return new AppError("invalid_input", `Invalid input: ${summary}`, fields);
}

/** Parse with a schema or throw an invalid_input AppError. */
export function parseOrThrow<T>(
  schema: { safeParse(v: unknown): { success: true; data: T } | { success: false; error: ZodError } },
  value: unknown,
  prefix?: string,
): T {
  const result = schema.safeParse(value);
  if (!result.success) throw invalidInput(result.error, prefix);
  return result.data;
}
