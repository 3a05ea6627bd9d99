/**
 * Logs: JSON lines (pino) from the app, the workers and the scripts, or the
 * same records made readable (pino-pretty) for a person at a terminal.
 *
 * Every record has `time`, `level` (a name: "info", "error"…) and `msg`, plus
 * whatever applies where it was written: `jobId`, `tenantId`, `attempt`,
 * `workerId`, `requestId`, `traceId`. Those come from `withLogContext` (the
 * API's route wrappers bind `requestId`, the job runner `jobId`, `tenantId`,
 * `attempt` and `workerId`) and from the active OpenTelemetry span, so code
 * below them logs with the fields without passing them along.
 *
 * `LOG_LEVEL` (default `info`) and `LOG_FORMAT` (`json`, or `pretty`: the
 * default unless NODE_ENV=production) are read from lib/env.ts. Records at
 * `warn` and above go to stderr, the rest to stdout.
 *
 * What never reaches a log: authorization headers, cookies, passwords,
 * tokens, secrets, keys, connection strings (pino `redact` on those fields),
 * request bodies, job inputs and uploaded rows (redacted by field name too,
 * and never passed in), credentials inside URLs and bearer/API tokens in
 * messages (`scrubSecrets`), and errors are reduced to name, message, code and
 * stack: a database error's `detail` (which may quote a row) is left out.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { trace } from "@opentelemetry/api";
import pino, { type DestinationStream, type Logger, type LoggerOptions } from "pino";
import pretty from "pino-pretty";
import { env } from "./env";

export type { Logger } from "pino";

/** Fields bound to everything logged inside `withLogContext` (and merged into each record). */
export type LogContext = {
  requestId?: string;
  jobId?: string;
  tenantId?: string;
  attempt?: number;
  workerId?: string;
};

const context = new AsyncLocalStorage<LogContext>();

/** Runs `fn` with `fields` added to every record logged inside it, however deep (nested contexts merge). */
export function withLogContext<T>(fields: LogContext, fn: () => T): T {
  return context.run({ ...context.getStore(), ...fields }, fn);
}

/** The fields `withLogContext` bound here, if any. */
export function logContext(): LogContext {
  return context.getStore() ?? {};
}

/** Field names whose values are never written, at the top of a record or one level down. */
const SECRET_KEYS = [
  "authorization",
  "cookie",
  "password",
  "newPassword",
  "token",
  "secret",
  "signingKey",
  "apiKey",
  "accessKeyId",
  "secretAccessKey",
  "connectionString",
  "databaseUrl",
  "DATABASE_URL",
  "AUTH_SECRET",
  "METRICS_TOKEN",
  "SMTP_URL",
  // Sensitive input: what a user sent or uploaded is data, not diagnostics.
  "body",
  "input",
  "rows",
  "row",
];

const REDACT_PATHS = [
  ...SECRET_KEYS,
  ...SECRET_KEYS.map((k) => `*.${k}`),
  'headers["set-cookie"]',
  '*.headers["set-cookie"]',
  'headers["x-api-key"]',
  '*.headers["x-api-key"]',
];

/**
 * Removes secrets a message may carry: the password of a URL
 * (`postgresql://user:pw@host`), bearer tokens, and Conveyor's own API tokens
 * (`cvy_…`), webhook signing secrets (`whsec_…`) and download links' tokens
 * (`dl_…`, the path of `/d/{token}`). Invitation tokens (`inv_…`) are left:
 * they travel in bodies, which are never logged, and printing the invitation
 * is the whole point of the `log` mail transport.
 */
export function scrubSecrets(text: string): string {
  return (
    text
      .replace(/\b([a-z][a-z0-9+.-]*:\/\/[^\s:/@]*):[^\s@/]*@/gi, "$1:[Redacted]@")
      // (Credentials of 8 characters or more: "a basic export" stays as it is.)
      .replace(/\b([Bb]earer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}/g, "$1 [Redacted]")
      .replace(/\b(cvy|dl)_[A-Za-z0-9_-]+/g, "$1_[Redacted]")
      // (A webhook secret is standard base64: `+`, `/` and `=` are part of it.)
      .replace(/\bwhsec_[A-Za-z0-9+/=_-]+/g, "whsec_[Redacted]")
  );
}

type ErrorLike = { name?: unknown; message?: unknown; stack?: unknown; code?: unknown; cause?: unknown };

/**
 * An error as logged: name, message, code and stack (secrets scrubbed), and its
 * cause the same way. Not its other fields: pg's `detail` and `where` and
 * Prisma's `meta` can quote the row or the parameters that failed.
 */
export function serializeError(err: unknown, depth = 0): Record<string, unknown> {
  if (!(err instanceof Error) && (typeof err !== "object" || err === null)) {
    return { message: scrubSecrets(String(err)) };
  }
  const e = err as ErrorLike;
  const out: Record<string, unknown> = {
    type: typeof e.name === "string" ? e.name : "Error",
    message: scrubSecrets(String(e.message ?? "")),
  };
  if (typeof e.code === "string" || typeof e.code === "number") out.code = e.code;
  if (typeof e.stack === "string") out.stack = scrubSecrets(e.stack);
  if (e.cause !== undefined && depth < 3) out.cause = serializeError(e.cause, depth + 1);
  return out;
}

/** The active OpenTelemetry span's trace id (tracing is set up elsewhere; without it there is none). */
function activeTraceId(): string | undefined {
  const ctx = trace.getActiveSpan()?.spanContext();
  return ctx && ctx.traceId !== "00000000000000000000000000000000" ? ctx.traceId : undefined;
}

/** Whether this process writes readable lines (pino-pretty) or JSON. */
export function logFormat(): "json" | "pretty" {
  return env().LOG_FORMAT ?? (env().NODE_ENV === "production" ? "json" : "pretty");
}

function options(): LoggerOptions {
  return {
    level: env().LOG_LEVEL,
    base: undefined, // no pid/hostname on every line; a log shipper adds the host
    messageKey: "msg",
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    serializers: { err: serializeError, error: serializeError },
    redact: { paths: REDACT_PATHS, censor: "[Redacted]" },
    mixin() {
      const traceId = activeTraceId();
      return { ...context.getStore(), ...(traceId ? { traceId } : {}) };
    },
    hooks: {
      // Messages are scrubbed too: an interpolated URL or token must not slip past `redact`.
      logMethod(args, method) {
        const scrubbed = args.map((a) => (typeof a === "string" ? scrubSecrets(a) : a)) as typeof args;
        return method.apply(this, scrubbed);
      },
    },
  };
}

/** stdout below `warn`, stderr from it; readable or JSON as `logFormat()` says. */
function standardStreams(): { out: DestinationStream; err: DestinationStream } {
  if (logFormat() === "pretty") {
    // One line a record, its fields after the message, but for those the message says already:
    // `component` is its [tag], a request's and an attempt's own fields are in their sentence.
    const readable = (destination: number) =>
      pretty({
        destination,
        sync: true,
        singleLine: true,
        translateTime: "SYS:HH:MM:ss.l",
        ignore: "pid,hostname,component,method,path,status,ms,task,outcome",
      });
    return { out: readable(1), err: readable(2) };
  }
  return { out: pino.destination({ dest: 1, sync: true }), err: pino.destination({ dest: 2, sync: true }) };
}

const WARN = 40;
let streams: { out: DestinationStream; err: DestinationStream } | undefined;
let redirected: DestinationStream | undefined;
let allToStderr = false;

/** Every record to stderr from now on: for a command line whose stdout is its result (`--json`). */
export function logToStderr(): void {
  allToStderr = true;
}

/**
 * Where records go. pino sets `lastLevel` on a stream that asks for it
 * (`pino.metadata`), which routes each record to stdout or stderr.
 */
const sink = {
  [Symbol.for("pino.metadata")]: true,
  lastLevel: 0,
  write(line: string) {
    if (redirected) return void redirected.write(line);
    streams ??= standardStreams();
    (allToStderr || this.lastLevel >= WARN ? streams.err : streams.out).write(line);
  },
};

/**
 * Sends this process's records, as JSON lines, to `stream` instead of stdout
 * and stderr until the returned function is called. For tests that read what
 * was logged, and tools that collect the log in-process.
 */
export function redirectLogs(stream: DestinationStream): () => void {
  redirected = stream;
  return () => {
    if (redirected === stream) redirected = undefined;
  };
}

/** The process's logger. */
export const logger: Logger = pino(options(), sink as unknown as DestinationStream);

/** A logger whose records all carry `bindings` (e.g. `{ workerId }`, `{ component: "scheduler" }`). */
export function childLogger(bindings: Record<string, unknown>): Logger {
  return logger.child(bindings);
}
