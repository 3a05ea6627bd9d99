import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { propagation, trace } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { contextFromCarrier, currentTraceCarrier, parseOtlpHeaders, spanPath, withSpan } from "@/lib/tracing";

describe("tracing helpers", () => {
  test("spanPath keeps words, versions and route templates, and masks everything else and the query", () => {
    assert.equal(spanPath("/api/v1/exports"), "/api/v1/exports");
    assert.equal(spanPath("/api/v1/exports/0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b/links"), "/api/v1/exports/:id/links");
    assert.equal(spanPath("/api/v1/uploads/abc123/"), "/api/v1/uploads/:id/");
    assert.equal(spanPath("/d/dl_AbC-123_xyz#frag"), "/d/:id");
    assert.equal(spanPath("/jobs?q=someone%40example.com"), "/jobs");
    assert.equal(spanPath("/jobs/[jobId]"), "/jobs/[jobId]");
    assert.equal(spanPath("/"), "/");
  });

  test("OTEL_EXPORTER_OTLP_HEADERS parses as key=value pairs, values percent-decoded", () => {
    assert.deepEqual(parseOtlpHeaders("api-key=s3cr%3Dt, x-team = ops"), { "api-key": "s3cr=t", "x-team": "ops" });
    assert.deepEqual(parseOtlpHeaders(undefined), {});
    assert.deepEqual(parseOtlpHeaders("novalue,=x"), {});
    assert.deepEqual(parseOtlpHeaders("k=100%"), { k: "100%" });
  });

  test("with no tracer provider, spans cost nothing, stay invalid, and no context is stored", async () => {
    const result = await withSpan("off", { a: 1 }, async (span) => {
      assert.equal(span.isRecording(), false);
      assert.equal(trace.isSpanContextValid(span.spanContext()), false);
      return currentTraceCarrier();
    });
    assert.equal(result, null);
    await assert.rejects(
      withSpan("off", {}, async () => {
        throw new Error("passes through");
      }),
      /passes through/,
    );
  });

  test("a stored carrier continues its trace; one that is missing or junk continues nothing", () => {
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    try {
      const parent = trace.getSpanContext(
        contextFromCarrier({ traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" }),
      );
      assert.equal(parent?.traceId, "4bf92f3577b34da6a3ce929d0e0e4736");
      assert.equal(parent?.spanId, "00f067aa0ba902b7");
      assert.equal(parent?.isRemote, true);
      for (const junk of [null, undefined, "00-abc", 42, { traceparent: 7 }, { traceparent: "nonsense" }]) {
        assert.equal(trace.getSpanContext(contextFromCarrier(junk)), undefined, JSON.stringify(junk));
      }
    } finally {
      propagation.disable();
    }
  });
});
