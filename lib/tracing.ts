/**
 * Tracing with OpenTelemetry. One trace follows a piece of work from the HTTP
 * request (lib/http/route.ts) through enqueue (lib/jobs/enqueue.ts), which
 * stores the W3C trace context with the job, to every attempt in whichever
 * worker runs it (lib/jobs/runner.ts) and the attempt's main steps (COPY,
 * storage writes, the archive); child jobs carry their parent attempt's context,
 * so an export and its parts are one trace.
 *
 * Off unless OTEL_EXPORTER_OTLP_ENDPOINT is set: then `initTracing` registers a
 * tracer provider that exports over OTLP/HTTP. Off, nothing is registered and
 * the helpers below run through @opentelemetry/api's no-op tracer (no span is
 * recorded, no context is stored with jobs); the SDK is not even loaded.
 *
 * Everything here goes through @opentelemetry/api's globals, never this
 * module's own state: Next.js bundles instrumentation.ts apart from the route
 * handlers, so each may have its own copy of this file.
 */
import {
  context,
  INVALID_SPAN_CONTEXT,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
} from "@opentelemetry/api";
import type { SpanProcessor } from "@opentelemetry/sdk-trace";
import { env } from "./env";

export { SpanKind, SpanStatusCode, type Span };

/** The W3C trace context as stored with a job (`jobs.trace_context`) and sent in HTTP headers. */
export type TraceCarrier = { traceparent: string; tracestate?: string };

export type TracingOptions = {
  /** `service.name` of this process's spans, unless OTEL_SERVICE_NAME says otherwise. */
  serviceName: string;
  /** Tests: export to these processors (an in-memory exporter) whether or not an endpoint is set. */
  spanProcessors?: SpanProcessor[];
};

/**
 * A URL path as it may appear in a span: ids, tokens and anything else that is
 * not a plain word become `:id`, and the query is dropped. A download link's
 * path is its secret (`/d/dl_…`), and a query can hold a search: neither leaves
 * the process. Route templates (`/d/[token]`) stay as they are.
 */
export function spanPath(target: string): string {
  const path = target.split(/[?#]/, 1)[0] ?? "";
  return path
    .split("/")
    .map((seg) =>
      seg === "" || /^[a-z][a-z-]*$/.test(seg) || /^v\d+$/.test(seg) || /^\[[^\]]+\]$/.test(seg) ? seg : ":id",
    )
    .join("/");
}

const HTTP_NAME = /^([A-Z]+) (\/\S*)$/;
const URL_ATTRIBUTES = ["http.target", "http.url", "url.full", "url.path", "url.query"] as const;

/**
 * Runs first on every span: Next.js's own request spans name themselves after
 * the raw URL until the route is known and record it in `http.target`; this
 * replaces both with `spanPath`'s masked path before any exporter sees them.
 */
function createScrubProcessor(): SpanProcessor {
  return {
    onStart(span) {
      const match = HTTP_NAME.exec(span.name);
      if (match) span.updateName(`${match[1]} ${spanPath(match[2]!)}`);
      for (const key of URL_ATTRIBUTES) {
        const value = span.attributes[key];
        if (typeof value === "string") span.setAttribute(key, key === "url.query" ? "" : spanPath(value));
      }
    },
    onEnd() {},
    forceFlush: () => Promise.resolve(),
    shutdown: () => Promise.resolve(),
  };
}

const STATE = Symbol.for("conveyor.tracing");
type TracingState = { shutdown(): Promise<void> };
const holder = globalThis as { [STATE]?: TracingState };

/** `key=value,key2=value2` (OTEL_EXPORTER_OTLP_HEADERS) as an object; values may be percent-encoded. */
export function parseOtlpHeaders(text: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of (text ?? "").split(",")) {
    const at = pair.indexOf("=");
    if (at <= 0) continue;
    const value = pair.slice(at + 1).trim();
    try {
      headers[pair.slice(0, at).trim()] = decodeURIComponent(value);
    } catch {
      headers[pair.slice(0, at).trim()] = value; // a lone `%`: taken as it is written
    }
  }
  return headers;
}

/**
 * Starts tracing in this process: a tracer provider exporting over OTLP/HTTP
 * when OTEL_EXPORTER_OTLP_ENDPOINT is set (or to `spanProcessors`), with an
 * AsyncLocalStorage context manager (so `withSpan` nests) and the W3C trace
 * context propagator. Resolves false, registering nothing, when tracing is off.
 * A second call does nothing.
 */
export async function initTracing(opts: TracingOptions): Promise<boolean> {
  if (holder[STATE]) return true;
  const e = env();
  if (!opts.spanProcessors && !e.OTEL_EXPORTER_OTLP_ENDPOINT) return false;
  // Loaded only when tracing is on.
  const [sdk, { AsyncLocalStorageContextManager }, { W3CTraceContextPropagator }, resources, semconv] =
    await Promise.all([
      import("@opentelemetry/sdk-trace"),
      import("@opentelemetry/context-async-hooks"),
      import("@opentelemetry/core"),
      import("@opentelemetry/resources"),
      import("@opentelemetry/semantic-conventions"),
    ]);
  let processors = opts.spanProcessors;
  if (!processors) {
    const { OTLPTraceExporter } = await import("@opentelemetry/exporter-trace-otlp-http");
    const exporter = new OTLPTraceExporter({
      url: `${e.OTEL_EXPORTER_OTLP_ENDPOINT!.replace(/\/+$/, "")}/v1/traces`,
      headers: parseOtlpHeaders(e.OTEL_EXPORTER_OTLP_HEADERS),
    });
    processors = [new sdk.BatchSpanProcessor({ exporter })];
  }
  const provider = new sdk.TracerProvider({
    resource: resources.resourceFromAttributes({
      [semconv.ATTR_SERVICE_NAME]: e.OTEL_SERVICE_NAME ?? opts.serviceName,
    }),
    // A trace begun upstream (an incoming traceparent) keeps its caller's decision.
    sampler: new sdk.ParentBasedSampler({ root: new sdk.TraceIdRatioBasedSampler(e.OTEL_TRACES_SAMPLER_ARG) }),
    spanProcessors: [createScrubProcessor(), ...processors],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  holder[STATE] = {
    async shutdown() {
      await provider.shutdown();
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
  return true;
}

/** Exports what is still buffered and stops tracing (a worker's or the server's shutdown; tests). */
export async function shutdownTracing(): Promise<void> {
  const state = holder[STATE];
  holder[STATE] = undefined;
  await state?.shutdown().catch(() => {});
}

function tracer() {
  return trace.getTracer("conveyor");
}

/** Marks a span failed: the exception recorded as an event, status ERROR with `message`. */
export function failSpan(span: Span, err: unknown, message?: string): void {
  const error = err instanceof Error ? err : new Error(String(err));
  span.recordException(error);
  span.setStatus({ code: SpanStatusCode.ERROR, message: message ?? error.message });
}

/**
 * Runs `fn` inside a new span, active for everything it awaits (so spans
 * started within are its children, and loggers see its trace id). A throw
 * marks the span failed and is rethrown; the span ends when `fn` settles.
 * `parent`: another context than the active one (a job's stored context).
 */
export function withSpan<T>(
  name: string,
  attributes: Attributes,
  fn: (span: Span) => Promise<T>,
  opts: { kind?: SpanKind; parent?: Context } = {},
): Promise<T> {
  return tracer().startActiveSpan(
    name,
    { kind: opts.kind ?? SpanKind.INTERNAL, attributes },
    opts.parent ?? context.active(),
    async (span) => {
      try {
        return await fn(span);
      } catch (err) {
        failSpan(span, err);
        throw err;
      } finally {
        span.end();
      }
    },
  );
}

/** The active span (a no-op one when tracing is off or none is active): for attributes and status. */
export function activeSpan(): Span {
  return trace.getActiveSpan() ?? trace.wrapSpanContext(INVALID_SPAN_CONTEXT);
}

/** The active trace's id, or undefined outside a recorded span (for log lines). */
export function activeTraceId(): string | undefined {
  const ctx = trace.getActiveSpan()?.spanContext();
  return ctx && trace.isSpanContextValid(ctx) ? ctx.traceId : undefined;
}

/** The active context as a carrier to store with a job; null when tracing is off or no span is active. */
export function currentTraceCarrier(): TraceCarrier | null {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  if (!carrier.traceparent) return null;
  return carrier.tracestate
    ? { traceparent: carrier.traceparent, tracestate: carrier.tracestate }
    : { traceparent: carrier.traceparent };
}

/** The context a stored carrier (a job's `trace_context`) continues; the root context for none or junk. */
export function contextFromCarrier(carrier: unknown): Context {
  if (!carrier || typeof carrier !== "object") return ROOT_CONTEXT;
  const fields: Record<string, string> = {};
  for (const key of ["traceparent", "tracestate"] as const) {
    const value = (carrier as Record<string, unknown>)[key];
    if (typeof value === "string") fields[key] = value;
  }
  return propagation.extract(ROOT_CONTEXT, fields);
}

/** The context of an incoming request: its `traceparent`/`tracestate` headers, when it has them. */
export function contextFromHeaders(headers: Headers): Context {
  return contextFromCarrier({
    traceparent: headers.get("traceparent") ?? undefined,
    tracestate: headers.get("tracestate") ?? undefined,
  });
}

/** Whether a span is active in this context (Next.js's own request span, when tracing is on). */
export function hasActiveSpan(): boolean {
  return trace.getActiveSpan() !== undefined;
}
