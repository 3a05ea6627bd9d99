import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { buffer } from "node:stream/consumers";
import { setTimeout as sleep } from "node:timers/promises";
import { z } from "zod";
import { SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace";
import { POST as createExportRoute } from "@/app/api/v1/exports/route";
import * as importsRoute from "@/app/api/v1/imports/route";
import * as uploadsRoute from "@/app/api/v1/uploads/[[...path]]/route";
import { createApiTokenForEmail } from "@/lib/auth/tokens";
import { db } from "@/lib/db";
import { resetEnvCache } from "@/lib/env";
import { openExportDownload, requestExport } from "@/lib/exports/service";
import { replayJob } from "@/lib/jobs/actions";
import { enqueueJob } from "@/lib/jobs/enqueue";
import { defineTask } from "@/lib/jobs/task";
import { resetStorage } from "@/lib/storage";
import { resetUploadServer } from "@/lib/uploads/tus";
import { initTracing, shutdownTracing, spanPath, withSpan } from "@/lib/tracing";
import { useTestDatabase } from "../helpers/db";
import { drainJobs } from "../helpers/fixtures";
import { workerArgs } from "../helpers/worker";

// A task whose every attempt fails (retryable): two attempts, both in the trace that made the job.
const failingTask = defineTask({
  type: "trace_test_fail",
  queue: "bulk",
  inputSchema: z.object({}).strict(),
  retry: { maxAttempts: 2, initialBackoffMs: 0, maxBackoffMs: 0, multiplier: 2, jitter: "none" },
  timeoutMs: 5_000,
  leaseMs: 5_000,
  async handler() {
    throw new Error("the downstream said no");
  },
});

// Files (exports, uploads) in a directory of this file's own; imports in chunks of 100 rows.
const dataDir = mkdtempSync(path.join(tmpdir(), "conveyor-tracing-test-"));
process.env.CONVEYOR_DATA_DIR = dataDir;
process.env.IMPORT_CHUNK_ROWS = "100";
resetEnvCache();
resetStorage();
resetUploadServer();
after(() => rmSync(dataDir, { recursive: true, force: true }));

const fx = useTestDatabase({ tasks: [failingTask] });
const exporter = new InMemorySpanExporter();

before(async () => {
  // The in-memory exporter instead of OTLP; the rest (context manager, propagator, sampler) as in production.
  assert.equal(
    await initTracing({ serviceName: "conveyor-test", spanProcessors: [new SimpleSpanProcessor({ exporter })] }),
    true,
  );
});
after(() => shutdownTracing());
beforeEach(() => exporter.reset());

// An upstream caller's trace: the request continues it.
const UPSTREAM_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const UPSTREAM_SPAN = "00f067aa0ba902b7";

const ctx = { params: Promise.resolve({}) };
const postExport = (token: string, body: unknown) =>
  createExportRoute(
    new Request("http://test/api/v1/exports", {
      method: "POST",
      body: JSON.stringify(body),
      headers: {
        Authorization: `Bearer ${token}`,
        "Content-Type": "application/json",
        traceparent: `00-${UPSTREAM_TRACE}-${UPSTREAM_SPAN}-01`,
        tracestate: "vendor=conveyor-test",
      },
    }),
    ctx,
  );

const spans = () => exporter.getFinishedSpans();
const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;
const idOf = (s: ReadableSpan) => s.spanContext().spanId;
function only(name: string, where: (s: ReadableSpan) => boolean = () => true): ReadableSpan {
  const found = spans().filter((s) => s.name === name && where(s));
  assert.equal(
    found.length,
    1,
    `one ${name} span (spans: ${spans()
      .map((s) => s.name)
      .join(", ")})`,
  );
  return found[0]!;
}

describe("tracing", () => {
  test("one trace links the API request, the enqueue, the attempt and its COPY and upload", async () => {
    const token = await createApiTokenForEmail("ada@acme.test", "tracing");
    const res = await postExport(token, { dataset: "orders", format: "csv", compression: "gzip" });
    assert.equal(res.status, 202);
    const { id } = (await res.json()) as { id: string };

    const request = only("POST /api/v1/exports");
    assert.equal(request.spanContext().traceId, UPSTREAM_TRACE, "the request continues the incoming traceparent");
    assert.equal(parentOf(request), UPSTREAM_SPAN);
    assert.equal(request.kind, SpanKind.SERVER);
    assert.equal(request.attributes["http.response.status_code"], 202);
    assert.equal(request.attributes["conveyor.tenant.id"], fx.p.acmeId);

    const enqueue = only("enqueue export");
    assert.equal(parentOf(enqueue), idOf(request));
    assert.equal(enqueue.attributes["conveyor.job.id"], id);

    // The context stored with the job is the enqueue span's.
    const row = await db().job.findUniqueOrThrow({ where: { id } });
    assert.deepEqual(row.traceContext, {
      traceparent: `00-${UPSTREAM_TRACE}-${idOf(enqueue)}-01`,
      tracestate: "vendor=conveyor-test",
    });

    // The worker continues it: the attempt's parent is the stored context, though nothing was active here.
    assert.equal(trace.getActiveSpan(), undefined);
    await drainJobs();
    assert.equal((await db().job.findUniqueOrThrow({ where: { id } })).status, "succeeded");

    const attempt = only("run export");
    assert.equal(attempt.spanContext().traceId, UPSTREAM_TRACE);
    assert.equal(parentOf(attempt), idOf(enqueue));
    assert.equal(attempt.kind, SpanKind.CONSUMER);
    assert.deepEqual(
      {
        id: attempt.attributes["conveyor.job.id"],
        type: attempt.attributes["conveyor.job.type"],
        tenant: attempt.attributes["conveyor.tenant.id"],
        attempt: attempt.attributes["conveyor.job.attempt"],
        queue: attempt.attributes["conveyor.job.queue"],
        outcome: attempt.attributes["conveyor.job.outcome"],
      },
      { id, type: "export", tenant: fx.p.acmeId, attempt: 1, queue: "interactive", outcome: "succeeded" },
    );
    assert.notEqual(attempt.status.code, SpanStatusCode.ERROR);

    const copy = only("export.copy");
    assert.equal(parentOf(copy), idOf(attempt));
    assert.equal(copy.attributes["conveyor.export.compression"], "gzip");
    const orders = await db().order.count({ where: { tenantId: fx.p.acmeId } });
    assert.equal(copy.attributes["db.response.returned_rows"], orders);

    const upload = only("storage.write");
    assert.equal(parentOf(upload), idOf(copy), "the upload is fed by the COPY");
    const file = await db().exportFile.findFirstOrThrow({ where: { jobId: id } });
    assert.equal(upload.attributes["conveyor.storage.bytes"], Number(file.size));
    assert.equal(upload.attributes["conveyor.storage.key"], file.storageKey);

    for (const s of spans()) assert.equal(s.spanContext().traceId, UPSTREAM_TRACE, `${s.name} is in the trace`);
    // The attempt starts after the request ended (each span's clock is anchored on its own: 2 ms of slack).
    const ms = (t: [number, number]) => t[0] * 1e3 + t[1] / 1e6;
    assert.ok(ms(request.endTime) <= ms(attempt.startTime) + 2);
  });

  test("an export's parts and its archive are one trace: each part's attempt under the export's", async () => {
    const token = await createApiTokenForEmail("ada@acme.test", "tracing-parts");
    const res = await postExport(token, { dataset: "events", format: "csv", partRows: 2500 });
    assert.equal(res.status, 202);
    const { id } = (await res.json()) as { id: string };
    await drainJobs();
    assert.equal((await db().job.findUniqueOrThrow({ where: { id } })).status, "succeeded");

    const enqueue = only("enqueue export");
    // The export runs twice: the attempt that fans out, then its resume that zips the parts.
    const runs = spans().filter((s) => s.name === "run export");
    assert.equal(runs.length, 2);
    assert.ok(runs.every((r) => parentOf(r) === idOf(enqueue)));
    const fanOut = runs.find((r) => r.attributes["conveyor.job.resume"] === 0)!;
    const resumed = runs.find((r) => r.attributes["conveyor.job.resume"] === 1)!;
    assert.equal(fanOut.attributes["conveyor.job.outcome"], "waiting");

    const parts = spans().filter((s) => s.name === "run export_part");
    assert.equal(parts.length, 4);
    for (const part of parts) {
      assert.equal(parentOf(part), idOf(fanOut), "a part continues the attempt that made it");
      const copy = only("export.copy", (s) => parentOf(s) === idOf(part));
      only("storage.write", (s) => parentOf(s) === idOf(copy));
    }
    const stored = await db().job.findMany({ where: { parentId: id }, select: { traceContext: true } });
    assert.ok(stored.every((c) => (c.traceContext as { traceparent: string }).traceparent.includes(idOf(fanOut))));

    const archive = only("export.archive");
    assert.equal(parentOf(archive), idOf(resumed));
    assert.equal(archive.attributes["conveyor.export.parts"], 4);
    only("storage.write", (s) => parentOf(s) === idOf(archive));
    assert.equal(new Set(spans().map((s) => s.spanContext().traceId)).size, 1, "all of it one trace");
  });

  test("an import's stages and each chunk's COPY are in the trace of the request that started it", async () => {
    const token = await createApiTokenForEmail("ada@acme.test", "tracing-imports");
    const { job: source } = await requestExport(fx.p.ada, { dataset: "customers", format: "csv" });
    await drainJobs();
    const csv = await buffer((await openExportDownload(fx.p.ada, source.id)).stream);
    const tus = { Authorization: `Bearer ${token}`, "Tus-Resumable": "1.0.0" };
    const created = await uploadsRoute.POST(
      new Request("http://test/api/v1/uploads", {
        method: "POST",
        headers: { ...tus, "Upload-Length": String(csv.length), "Upload-Metadata": "filename Y3VzdG9tZXJzLmNzdg==" },
      }),
      ctx,
    );
    assert.equal(created.status, 201);
    const uploadId = created.headers.get("location")!.split("/").pop()!;
    const sent = await uploadsRoute.PATCH(
      new Request(`http://test/api/v1/uploads/${uploadId}`, {
        method: "PATCH",
        headers: { ...tus, "Upload-Offset": "0", "Content-Type": "application/offset+octet-stream" },
        body: new Uint8Array(csv),
      }),
      { params: Promise.resolve({ path: [uploadId] }) },
    );
    assert.equal(sent.status, 204);
    exporter.reset();

    const res = await importsRoute.POST(
      new Request("http://test/api/v1/imports", {
        method: "POST",
        body: JSON.stringify({ uploadId, dataset: "customers", mode: "upsert" }),
        headers: {
          Authorization: `Bearer ${token}`,
          "Content-Type": "application/json",
          traceparent: `00-${UPSTREAM_TRACE}-${UPSTREAM_SPAN}-01`,
        },
      }),
      ctx,
    );
    assert.equal(res.status, 202, await res.clone().text());
    const { id } = (await res.json()) as { id: string };
    await drainJobs();
    assert.equal((await db().job.findUniqueOrThrow({ where: { id } })).status, "succeeded");

    const request = only("POST /api/v1/imports");
    const enqueue = only("enqueue import");
    assert.equal(parentOf(enqueue), idOf(request));
    const stages = ["import_scan", "import_parse", "import_chunk", "import_load", "import_commit"];
    for (const stage of stages)
      assert.ok(
        spans().some((s) => s.name === `run ${stage}`),
        `a span for ${stage}`,
      );
    const chunks = spans().filter((s) => s.name === "run import_load_chunk");
    const exportedRows = Number((await db().job.findUniqueOrThrow({ where: { id: source.id } })).progressDone);
    assert.equal(chunks.length, Math.ceil(exportedRows / 100));
    let loaded = 0;
    for (const chunk of chunks) {
      const copy = only("import.copy", (s) => parentOf(s) === idOf(chunk));
      loaded += Number(copy.attributes["conveyor.import.rows"]);
    }
    assert.equal(loaded, exportedRows, "the chunks' COPYs loaded every row of the file");
    assert.deepEqual(
      [...new Set(spans().map((s) => s.spanContext().traceId))],
      [UPSTREAM_TRACE],
      "all of it one trace",
    );
  });

  test("a failed attempt's span has error status and the exception; a retry stays in the same trace", async () => {
    const { job } = await withSpan("test caller", {}, () =>
      enqueueJob({ tenantId: fx.p.acmeId, type: failingTask.type, input: {} }),
    );
    await drainJobs();
    assert.equal((await db().job.findUniqueOrThrow({ where: { id: job.id } })).status, "failed");

    const enqueue = only("enqueue trace_test_fail");
    const attempts = spans()
      .filter((s) => s.name === "run trace_test_fail")
      .sort((a, b) => Number(a.attributes["conveyor.job.attempt"]) - Number(b.attributes["conveyor.job.attempt"]));
    assert.deepEqual(
      attempts.map((a) => [a.attributes["conveyor.job.attempt"], a.attributes["conveyor.job.outcome"]]),
      [
        [1, "retrying"],
        [2, "failed"],
      ],
    );
    for (const a of attempts) {
      assert.equal(parentOf(a), idOf(enqueue));
      assert.equal(a.spanContext().traceId, enqueue.spanContext().traceId);
      assert.equal(a.status.code, SpanStatusCode.ERROR);
      assert.equal(a.status.message, "the downstream said no");
      const exception = a.events.find((e) => e.name === "exception");
      assert.equal(exception?.attributes?.["exception.message"], "the downstream said no");
    }

    // Its replay continues the trace of the request that asked for it, not the original's.
    const replay = await withSpan("replay request", {}, async (span) => ({
      dto: await replayJob(fx.p.oscar, job.id),
      traceId: span.spanContext().traceId,
    }));
    const stored = (await db().job.findUniqueOrThrow({ where: { id: replay.dto.id } })).traceContext as {
      traceparent: string;
    };
    assert.equal(stored.traceparent.split("-")[1], replay.traceId);
    assert.notEqual(replay.traceId, enqueue.spanContext().traceId);
  });

  test("a request span names no id, token or query; Next.js's raw-URL spans are masked before export", async () => {
    assert.equal(spanPath("/api/v1/jobs/0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b/events"), "/api/v1/jobs/:id/events");
    assert.equal(spanPath("/d/dl_s3cr3tToken?download=1"), "/d/:id");
    assert.equal(spanPath("/d/[token]"), "/d/[token]");
    // What Next.js's own server span looks like when it starts, before it knows the route.
    const next = trace
      .getTracer("next.js")
      .startSpan("GET /d/dl_s3cr3tToken?x=1", { attributes: { "http.target": "/d/dl_s3cr3tToken?x=1" } });
    next.end();
    const [exported] = spans();
    assert.equal(exported?.name, "GET /d/:id");
    assert.equal(exported?.attributes["http.target"], "/d/:id");
  });

  test("a worker process continues the stored trace and exports its spans over OTLP/HTTP", async () => {
    // A collector: records what the worker's exporter posts.
    const posts: { url: string; auth: string | undefined; body: string }[] = [];
    const collector = createServer((req, res) => {
      let body = "";
      req.on("data", (d: Buffer) => (body += d.toString()));
      req.on("end", () => {
        posts.push({ url: req.url ?? "", auth: req.headers.authorization, body });
        res.writeHead(200, { "Content-Type": "application/json" }).end("{}");
      });
    });
    collector.listen(0, "127.0.0.1");
    await once(collector, "listening");
    const { port } = collector.address() as AddressInfo;

    const { job } = await withSpan("test caller", {}, () =>
      enqueueJob({ tenantId: fx.p.acmeId, type: "export", input: { dataset: "customers", format: "csv" } }),
    );
    const enqueue = only("enqueue export");
    const worker = spawn(process.execPath, workerArgs("--concurrency", "1"), {
      env: {
        ...process.env,
        DATABASE_URL: fx.database.url,
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}/`,
        OTEL_EXPORTER_OTLP_HEADERS: "authorization=Bearer%20collector-key",
        OTEL_SERVICE_NAME: "conveyor-worker-test",
      },
      stdio: ["ignore", "pipe", "pipe", "ipc"],
    });
    let output = "";
    worker.stdout!.on("data", (d: Buffer) => (output += d.toString()));
    worker.stderr!.on("data", (d: Buffer) => (output += d.toString()));
    try {
      const deadline = Date.now() + 60_000;
      while ((await db().job.findUniqueOrThrow({ where: { id: job.id } })).status !== "succeeded") {
        assert.ok(Date.now() < deadline, `the worker ran the export\n${output}`);
        await sleep(50);
      }
      // A stopping worker sends what its batch still holds.
      worker.kill("SIGTERM");
      const [code] = (await once(worker, "exit")) as [number | null];
      assert.equal(code, 0, output);
    } finally {
      if (worker.exitCode === null) worker.kill("SIGKILL");
      collector.close();
    }

    type OtlpSpan = { traceId: string; spanId: string; parentSpanId?: string; name: string };
    type OtlpBody = {
      resourceSpans: {
        resource: { attributes: { key: string; value: { stringValue?: string } }[] };
        scopeSpans: { spans: OtlpSpan[] }[];
      }[];
    };
    assert.ok(posts.length > 0, "the worker exported");
    assert.ok(posts.every((p) => p.url === "/v1/traces" && p.auth === "Bearer collector-key"));
    const exported = posts.flatMap((p) =>
      (JSON.parse(p.body) as OtlpBody).resourceSpans.flatMap((rs) =>
        rs.scopeSpans.flatMap((ss) =>
          ss.spans.map((span) => ({
            ...span,
            service: rs.resource.attributes.find((a) => a.key === "service.name")?.value.stringValue,
          })),
        ),
      ),
    );
    const run = exported.find((x) => x.name === "run export");
    assert.ok(run, `a run export span among ${exported.map((x) => x.name).join(", ")}`);
    assert.equal(run.service, "conveyor-worker-test");
    assert.equal(run.traceId, enqueue.spanContext().traceId, "the worker continued the trace stored with the job");
    assert.equal(run.parentSpanId, idOf(enqueue));
    const copy = exported.find((x) => x.name === "export.copy");
    assert.equal(copy?.parentSpanId, run.spanId);
  });

  test("with tracing off nothing is recorded and no context is stored with a job", async () => {
    await shutdownTracing();
    const { job } = await withSpan("ignored", {}, () =>
      enqueueJob({ tenantId: fx.p.acmeId, type: "export", input: { dataset: "customers", format: "csv" } }),
    );
    assert.equal((await db().job.findUniqueOrThrow({ where: { id: job.id } })).traceContext, null);
    await drainJobs();
    assert.equal(spans().length, 0);
  });
});
