-- Tracing: the W3C trace context ({"traceparent": …, "tracestate": …}) of the span that created a
-- job (the API request's enqueue, or the parent attempt that fanned it out), so every attempt's span
-- continues the request's trace in whichever worker runs it (lib/tracing.ts). NULL when tracing was
-- off where the job was made.

ALTER TABLE "jobs" ADD COLUMN "trace_context" JSONB;
