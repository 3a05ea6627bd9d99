import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { AppError } from "@/lib/errors";
import { openJobEventStream, openTenantEventStream } from "@/lib/sse/streams";
import { requestExport } from "@/lib/exports/service";
import { useTestDatabase } from "../helpers/db";
import { drainJobs } from "../helpers/fixtures";

const fx = useTestDatabase();

type Frame = { id?: number; event: string; data: unknown };

/** Reads SSE frames until the stream ends or `stop` says so. */
async function readFrames(
  stream: ReadableStream<Uint8Array>,
  stop: (f: Frame[]) => boolean = () => false,
): Promise<Frame[]> {
  const frames: Frame[] = [];
  const reader = stream
    .pipeThrough(new TextDecoderStream() as unknown as ReadableWritablePair<string, Uint8Array>)
    .getReader();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += value;
    let idx: number;
    while ((idx = buf.indexOf("\n\n")) !== -1) {
      const raw = buf.slice(0, idx);
      buf = buf.slice(idx + 2);
      const frame: Partial<Frame> & { event?: string } = {};
      for (const line of raw.split("\n")) {
        if (line.startsWith("id: ")) frame.id = Number(line.slice(4));
        if (line.startsWith("event: ")) frame.event = line.slice(7);
        if (line.startsWith("data: ")) frame.data = JSON.parse(line.slice(6));
      }
      if (frame.event) frames.push(frame as Frame);
    }
    if (stop(frames)) {
      await reader.cancel();
      break;
    }
  }
  return frames;
}

describe("server-sent events", () => {
  test("a job stream sends a snapshot, then progress and status, and closes after the terminal snapshot", async () => {
    const { job } = await requestExport(fx.p.ada, { dataset: "events", format: "csv" });
    const stream = await openJobEventStream(fx.p.ada, job.id, new AbortController().signal);
    const reading = readFrames(stream);
    await drainJobs();
    const frames = await reading; // ends by itself: the server closes after a terminal status
    assert.equal(frames[0]?.event, "snapshot");
    assert.equal((frames[0]?.data as { status: string }).status, "queued");
    const last = frames.at(-1)!;
    assert.equal(last.event, "snapshot");
    const final = last.data as { status: string; result: { files: { rows: number }[] } };
    assert.equal(final.status, "succeeded");
    assert.ok(final.result.files[0]!.rows > 0);
    const kinds = frames.map((f) => f.event);
    assert.ok(kinds.includes("status"), "status events are sent");
    const ids = frames.map((f) => f.id!).filter((i) => i !== undefined);
    assert.deepEqual(
      ids,
      [...ids].sort((a, b) => a - b),
      "event ids rise",
    );
  });

  test("a finished job's stream is its snapshot alone", async () => {
    const { job } = await requestExport(fx.p.ada, { dataset: "customers" });
    await drainJobs();
    const frames = await readFrames(await openJobEventStream(fx.p.ada, job.id, new AbortController().signal));
    assert.deepEqual(
      frames.map((f) => f.event),
      ["snapshot"],
    );
  });

  test("another tenant's job stream is not found before any byte is sent", async () => {
    const { job } = await requestExport(fx.p.ada, { dataset: "customers" });
    await assert.rejects(
      openJobEventStream(fx.p.gus, job.id, new AbortController().signal),
      (e: unknown) => e instanceof AppError && e.code === "not_found",
    );
  });

  test("the tenant stream carries the tenant's jobs only", async () => {
    const abort = new AbortController();
    const gusStream = await openTenantEventStream(fx.p.gus, abort.signal);
    const adaStream = await openTenantEventStream(fx.p.ada, abort.signal);
    const gusFrames = readFrames(gusStream, (f) => f.length > 0);
    const adaFrames = readFrames(adaStream, (f) =>
      f.some((x) => (x.data as { status: string }).status === "succeeded"),
    );
    await new Promise((r) => setTimeout(r, 200)); // both subscribed
    const { job: acmeJob } = await requestExport(fx.p.ada, { dataset: "customers" });
    const { job: globexJob } = await requestExport(fx.p.gus, { dataset: "customers" });
    await drainJobs();
    const ada = await adaFrames;
    const gus = await gusFrames;
    assert.ok(ada.every((f) => (f.data as { jobId: string }).jobId !== globexJob.id));
    assert.ok(ada.some((f) => (f.data as { jobId: string }).jobId === acmeJob.id));
    assert.ok(gus.every((f) => (f.data as { jobId: string }).jobId !== acmeJob.id));
    abort.abort();
  });

  test("the tenant stream resumes after a dropped connection from Last-Event-ID, without gaps", async () => {
    // Connected, sees one job finish, then drops.
    const first = await requestExport(fx.p.ada, { dataset: "customers" });
    const abort1 = new AbortController();
    const reading = readFrames(await openTenantEventStream(fx.p.ada, abort1.signal), (f) =>
      f.some((x) => (x.data as { jobId: string; status: string }).status === "succeeded"),
    );
    await drainJobs();
    const before = await reading;
    abort1.abort();
    const lastId = before.at(-1)!.id!;

    // While it is away: one job finishes, another is requested and waits.
    const missed = await requestExport(fx.p.ada, { dataset: "orders" });
    await drainJobs();
    const waiting = await requestExport(fx.p.ada, { dataset: "customers", format: "jsonl" });
    const gusJob = await requestExport(fx.p.gus, { dataset: "customers" });

    const abort2 = new AbortController();
    const resumed = await readFrames(await openTenantEventStream(fx.p.ada, abort2.signal, String(lastId)), (f) =>
      [waiting.job.id, missed.job.id].every((id) => f.some((x) => (x.data as { jobId: string }).jobId === id)),
    );
    abort2.abort();
    const seen = new Map(resumed.map((f) => [(f.data as { jobId: string }).jobId, f.data as { status: string }]));
    assert.equal(seen.get(missed.job.id)?.status, "succeeded", "the job that finished while away is replayed");
    assert.ok(seen.has(waiting.job.id), "the job requested while away is replayed");
    assert.ok(!seen.has(gusJob.job.id), "never another tenant's");
    assert.ok(
      resumed.every((f) => f.id !== undefined && f.id >= lastId - 5_000),
      "replayed events carry ids to resume from again",
    );
    assert.ok(first.job.id);
    await drainJobs();
  });

  test("a client that reads nothing is coalesced, then dropped, never buffered without bound", async () => {
    const { MAX_BACKLOG, MAX_COALESCED, sseStats } = await import("@/lib/sse/streams");
    const stream = await openTenantEventStream(fx.p.ada, new AbortController().signal);
    await new Promise((r) => setTimeout(r, 50)); // subscribed
    const before = { ...sseStats };
    // Many changes to a few jobs: the stream holds MAX_BACKLOG frames, then one per job.
    const event = (jobId: string, seq: number) => ({
      tenantId: fx.p.acmeId,
      jobId,
      seq,
      type: "export",
      status: "running",
      attempts: 1,
      done: seq,
      total: null,
      unit: "rows",
      stage: null,
      message: null,
      at: new Date().toISOString(),
    });
    const { pool } = await import("@/lib/db");
    const notify = (e: unknown) => pool().query("SELECT pg_notify('conveyor_job_events', $1)", [JSON.stringify(e)]);
    for (let i = 0; i < MAX_BACKLOG + 500; i++) await notify(event(`00000000-0000-7000-8000-00000000000${i % 5}`, i));
    await new Promise((r) => setTimeout(r, 300));
    assert.ok(sseStats.coalesced - before.coalesced >= 400, `coalesced: ${sseStats.coalesced - before.coalesced}`);
    // Then more distinct jobs than it may hold: dropped.
    for (let i = 0; i <= MAX_COALESCED; i++) {
      await notify(event(`00000000-0000-7000-8000-${String(i).padStart(12, "0")}`, 1));
    }
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(sseStats.dropped - before.dropped, 1, "the slow client was dropped");
    const reader = stream.getReader();
    let frames = 0;
    for (;;) {
      const { done } = await reader.read();
      if (done) break;
      frames++;
    }
    assert.ok(frames <= MAX_BACKLOG + 3, `what it had queued, then the end (${frames} chunks)`);
  });
});
