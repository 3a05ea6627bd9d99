/**
 * Next.js calls `register()` once when a server starts, before it serves a
 * request: tracing for the app process (lib/tracing.ts), on when
 * OTEL_EXPORTER_OTLP_ENDPOINT is set. Next.js then traces its own request
 * handling too, and continues an incoming `traceparent`.
 */
export async function register(): Promise<void> {
  // NEXT_RUNTIME is Next's own (inlined per bundle), not configuration: the SDK needs Node.js's
  // AsyncLocalStorage, so an edge bundle registers nothing.
  if (process.env.NEXT_RUNTIME !== "nodejs") return;
  const { initTracing } = await import("./lib/tracing");
  await initTracing({ serviceName: "conveyor-web" });
}
