/**
 * Server-Sent Event streams over the event hub: per job (a snapshot first,
 * then every change, closed after a terminal status) and per tenant.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { requireTenant } from "../auth/authorize";
import type { Principal } from "../auth/principal";
import { env } from "../env";
import { eventHub, type JobEvent } from "../events/hub";
import { isTerminal, toRetries, type JobDto, type JobProgressDto, type JobStatus } from "../jobs/dto";
import { recentRate } from "../jobs/progress-rate";
import { progressWords } from "../jobs/progress-words";
import { getJob, jobsChangedSince } from "../jobs/queries";
import { takeStreamSlot, type StreamSlot } from "./admission";
import { watchStream } from "./recheck";

export const KEEP_ALIVE_MS = 15_000;
const encoder = new TextEncoder();

/** One SSE frame. `data` is JSON-encoded, so it never contains a raw newline. */
export function sseFrame(event: string, data: unknown, id?: number): Uint8Array {
  return encoder.encode(`${id !== undefined ? `id: ${id}\n` : ""}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

type Sink = {
  send(chunk: Uint8Array): void;
  /** An event about `key` (a job): coalesced with later ones about it while the client lags. */
  sendEvent(key: string, chunk: Uint8Array): void;
  close(): void;
  closed: boolean;
};

/** Frames queued for a client before its events are coalesced (latest per job). */
export const MAX_BACKLOG = 64;
/** Jobs held for a lagging client before it is dropped (it reconnects and resumes). */
export const MAX_COALESCED = 2_000;

/** Slow-consumer accounting, for /api/metrics and the SSE benchmark. */
export const sseStats = { coalesced: 0, dropped: 0 };

/** Who holds a stream, and the slot it takes among the principal's streams. */
type StreamHolder = { principal: Principal; slot: StreamSlot };

/**
 * Where a stream's frames go: the ReadableStream a route handler answers with, or, on the
 * server `npm start` runs, the socket itself (lib/http/sse-direct.ts).
 */
export type StreamOutput = {
  /** Queues a frame; throws once the output is closed. */
  enqueue(chunk: Uint8Array): void;
  /** More is queued than a client that keeps up would leave: coalesce what follows. */
  lagging(): boolean;
  close(): void;
  /** The client is known gone (its socket closed): the stream ends without waiting for a write to fail. */
  gone?(): boolean;
};

/** The outputs of streams opened inside `directOutputs.run(…)`, when one is given there. */
export type DirectOutputs = { open(): StreamOutput & { onDrain(flush: () => void): void } };
const directKey = Symbol.for("conveyor.sse.direct");
const directStore = globalThis as unknown as { [directKey]?: AsyncLocalStorage<DirectOutputs> };
/** Set by lib/http/sse-direct.ts around a route handler it runs on the node:http server. */
export const directOutputs: AsyncLocalStorage<DirectOutputs> = (directStore[directKey] ??=
  new AsyncLocalStorage<DirectOutputs>());

function makeStream(
  signal: AbortSignal,
  holder: StreamHolder,
  start: (sink: Sink) => Promise<() => void>,
): ReadableStream<Uint8Array> {
  const direct = directOutputs.getStore();
  if (direct) {
    // Frames go to the socket; the Response's body is never read.
    const out = direct.open();
    const stream = openStream(signal, holder, start, out);
    out.onDrain(stream.flush);
    return new ReadableStream<Uint8Array>();
  }
  let stream: ReturnType<typeof openStream> | null = null;
  return new ReadableStream<Uint8Array>({
    async start(controller) {
      stream = openStream(signal, holder, start, {
        enqueue: (chunk) => controller.enqueue(chunk),
        lagging: () => (controller.desiredSize ?? 0) < -MAX_BACKLOG,
        close: () => controller.close(),
      });
      await stream.started;
    },
    pull() {
      stream?.flush();
    },
    cancel() {
      stream?.cancel();
    },
  });
}

function openStream(
  signal: AbortSignal,
  holder: StreamHolder,
  start: (sink: Sink) => Promise<() => void>,
  out: StreamOutput,
): { started: Promise<void>; flush(): void; cancel(): void } {
  let cleanup: (() => void) | null = null;
  let keepAlive: NodeJS.Timeout | null = null;
  let unwatch: (() => void) | null = null;
  let lifetime: NodeJS.Timeout | null = null;
  let released = false;
  const finish = () => {
    if (keepAlive) clearInterval(keepAlive);
    if (lifetime) clearTimeout(lifetime);
    keepAlive = lifetime = null;
    unwatch?.();
    unwatch = null;
    cleanup?.();
    cleanup = null;
    if (!released) {
      released = true;
      void holder.slot.release().catch(() => {});
    }
  };
  // Events for a client that does not keep up: the newest one per job, in order of change.
  let coalesced: Map<string, Uint8Array> | null = null;
  const flush = () => {
    if (!coalesced) return;
    for (const [key, chunk] of coalesced) {
      if (out.lagging()) return;
      coalesced.delete(key);
      try {
        out.enqueue(chunk);
      } catch {
        sink.close();
        return;
      }
    }
    coalesced = null;
  };
  const sink: Sink = {
    closed: false,
    send(chunk) {
      if (this.closed) return;
      try {
        out.enqueue(chunk);
      } catch {
        // The client is gone (its socket closed before the abort arrived): end the stream here, or
        // its slot and re-check stay behind, the abort and the lifetime finding it closed already.
        this.close();
      }
    },
    sendEvent(key, chunk) {
      if (this.closed) return;
      if (coalesced || out.lagging()) {
        coalesced ??= new Map();
        if (coalesced.has(key)) sseStats.coalesced++;
        coalesced.delete(key);
        coalesced.set(key, chunk);
        if (coalesced.size > MAX_COALESCED) {
          // Never buffered without bound: drop it; EventSource reconnects with Last-Event-ID.
          sseStats.dropped++;
          coalesced = null;
          this.close();
        }
        return;
      }
      this.send(chunk);
    },
    close() {
      if (this.closed) return;
      this.closed = true;
      finish();
      try {
        out.close();
      } catch {
        /* already closed by the client */
      }
    },
  };
  signal.addEventListener("abort", () => sink.close(), { once: true });
  // Tell EventSource how long to wait before reconnecting.
  sink.send(encoder.encode("retry: 2000\n\n"));
  // A keep-alive only where nothing waits to be read: a client that lags has frames queued already,
  // and a keep-alive added to them would grow what it holds past the backlog.
  keepAlive = setInterval(() => {
    // (A client that went away while lagging would never get a keep-alive whose write fails.)
    if (out.gone?.()) sink.close();
    else if (!coalesced && !out.lagging()) sink.send(encoder.encode(": keep-alive\n\n"));
  }, KEEP_ALIVE_MS);
  // The principal is re-checked while the stream is open: a revoked token, an expired one or a
  // removed membership ends it. One re-check per process reloads each principal once and refreshes
  // every open stream's slot in one statement (lib/sse/recheck.ts). A stream also has a longest
  // life; EventSource then reconnects (with Last-Event-ID) and misses nothing.
  if (!sink.closed) unwatch = watchStream(holder.principal, holder.slot.id, () => sink.close());
  lifetime = setTimeout(() => sink.close(), env().SSE_MAX_LIFETIME_MS);
  const started = (async () => {
    try {
      cleanup = await start(sink);
      if (sink.closed) finish();
    } catch (err) {
      sink.send(sseFrame("error", { message: err instanceof Error ? err.message : "stream failed" }));
      sink.close();
    }
  })();
  return {
    started,
    flush,
    cancel() {
      coalesced = null;
      finish();
    },
  };
}

/** A job event as SSE clients get it (`progress` and `status` frames of a job stream, `job` frames of the tenant's). */
export type JobEventWire = {
  jobId: string;
  seq: number;
  type: string;
  status: JobStatus;
  attempts: number;
  /**
   * As the job's; an event's `detail` is null when the job's was too large for a notification
   * (over 2 kB), and then its `message` is worded without it.
   */
  progress: Omit<JobProgressDto, "detail"> & { detail?: JobProgressDto["detail"] };
  /** A cancel was requested and the job has not ended yet (or ended by it). */
  cancelRequested: boolean;
  admission: JobDto["admission"];
  at: string;
};

function eventToWire(e: JobEvent): JobEventWire {
  return {
    jobId: e.jobId,
    seq: e.seq,
    type: e.type,
    status: e.status,
    attempts: e.attempts,
    progress: {
      done: e.done,
      total: e.total,
      unit: e.unit,
      stage: e.stage,
      message: progressWords({
        type: e.type,
        input: null,
        progress: { done: e.done, total: e.total, unit: e.unit, stage: e.stage, detail: e.detail, message: e.message },
      }),
      detail: e.detail,
      bytes: e.bytes,
      rate: recentRate(e.samples, Date.parse(e.at)),
      samples: e.samples,
      children: e.children && { ...e.children, retries: toRetries(e.children.retries) },
    },
    cancelRequested: e.cancelRequested,
    admission: e.admission,
    at: e.at,
  };
}

/**
 * The event stream of one job. Throws not_found (before any byte is sent) for
 * a job the principal may not see.
 */
export async function openJobEventStream(
  principal: Principal,
  rawJobId: string,
  signal: AbortSignal,
): Promise<ReadableStream<Uint8Array>> {
  const first = await getJob(principal, rawJobId);
  const slot = await takeStreamSlot(principal);
  return makeStream(signal, { principal, slot }, async (sink) => {
    let snapshotSeq = -1;
    let lastStatus: string = first.status;
    let buffered: JobEvent[] | null = [];
    const finalSnapshot = async () => {
      const job = await getJob(principal, first.id);
      sink.send(sseFrame("snapshot", job, job.seq));
      sink.close();
    };
    const onEvent = (e: JobEvent) => {
      if (buffered) return void buffered.push(e);
      if (e.seq <= snapshotSeq) return;
      snapshotSeq = e.seq;
      const kind = e.status !== lastStatus ? "status" : "progress";
      lastStatus = e.status;
      sink.sendEvent(first.id, sseFrame(kind, eventToWire(e), e.seq));
      // The terminal snapshot carries what the event cannot: result files, error.
      if (isTerminal(e.status)) void finalSnapshot().catch(() => sink.close());
    };
    // Subscribe before reading the snapshot so no change between the two is lost.
    // If the hub loses its connection, close: EventSource reconnects and starts
    // over from a fresh snapshot.
    const unsubscribe = await eventHub().subscribe({ jobId: first.id }, onEvent, () => sink.close());
    let snapshot: JobDto;
    try {
      snapshot = await getJob(principal, first.id);
    } catch (err) {
      unsubscribe();
      throw err;
    }
    snapshotSeq = snapshot.seq;
    lastStatus = snapshot.status;
    sink.send(sseFrame("snapshot", snapshot, snapshot.seq));
    if (isTerminal(snapshot.status)) {
      sink.close();
      return unsubscribe;
    }
    const pending = buffered;
    buffered = null;
    for (const e of pending) onEvent(e);
    return unsubscribe;
  });
}

/** How far before the Last-Event-ID a resume looks again (a change's time is its transaction's). */
const RESUME_MARGIN_MS = 5_000;

function jobToWire(job: JobDto): JobEventWire {
  return {
    jobId: job.id,
    seq: job.seq,
    type: job.type,
    status: job.status,
    attempts: job.attempts,
    progress: job.progress,
    cancelRequested: job.cancelRequested !== null,
    admission: job.admission,
    at: job.finishedAt ?? new Date().toISOString(),
  };
}

/** An event's id on the tenant stream: when it happened, in ms, so a reconnect can say where it left off. */
function eventId(at: string): number {
  const t = Date.parse(at);
  return Number.isNaN(t) ? Date.now() : t;
}

/**
 * An event's `job` frame, made once however many tenant streams carry it: the hub hands every
 * subscriber the same event object, and with 1,000 streams a frame per stream was 1,000
 * JSON.stringify and encode calls per event.
 */
const tenantFrames = new WeakMap<JobEvent, Uint8Array>();
function tenantFrame(e: JobEvent): Uint8Array {
  let frame = tenantFrames.get(e);
  if (!frame) tenantFrames.set(e, (frame = sseFrame("job", eventToWire(e), eventId(e.at))));
  return frame;
}

/**
 * Every job event of the principal's tenant (all tenants for a platform
 * admin). With `lastEventId` (EventSource sends it on reconnect) it first
 * replays, as one `job` event each with its current state, every job that may
 * have changed since then — the tenant's unfinished jobs and those finished
 * since; past 1,000 it sends `reset` (reload your lists) — then goes on live; events that arrive meanwhile are held and sent
 * after, and a client drops those older than what it has by `seq`.
 */
export async function openTenantEventStream(
  principal: Principal,
  signal: AbortSignal,
  lastEventId?: string | null,
): Promise<ReadableStream<Uint8Array>> {
  const tenantId = principal.isPlatformAdmin ? undefined : requireTenant(principal);
  const since = lastEventId && /^[0-9]{1,15}$/.test(lastEventId) ? Number(lastEventId) : null;
  const slot = await takeStreamSlot(principal);
  return makeStream(signal, { principal, slot }, async (sink) => {
    let held: JobEvent[] | null = since === null ? null : [];
    const emit = (e: JobEvent) => sink.sendEvent(e.jobId, tenantFrame(e));
    const unsubscribe = await eventHub().subscribe(
      { tenantId },
      (e) => (held ? held.push(e) : emit(e)),
      () => sink.close(),
    );
    if (since !== null) {
      try {
        const { jobs, complete } = await jobsChangedSince(principal, new Date(since - RESUME_MARGIN_MS));
        if (!complete) sink.send(sseFrame("reset", { reason: "too many changes to replay" }, since));
        for (const job of jobs) sink.sendEvent(job.id, sseFrame("job", jobToWire(job), since));
      } catch (err) {
        unsubscribe();
        throw err;
      }
      const pending = held ?? [];
      held = null;
      for (const e of pending) emit(e);
    }
    return unsubscribe;
  });
}
