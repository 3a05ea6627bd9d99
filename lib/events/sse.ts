/**
 * Server-Sent Event streams over the event hub: per job (a snapshot first,
 * then every change, closed after a terminal status) and per tenant.
 */
import { requireTenant, type Principal } from "../auth/principal";
import { isTerminal, type JobDto, type JobStatus } from "../jobs/dto";
import { getJob } from "../jobs/queries";
import { eventHub, type JobEvent } from "./hub";

export const KEEP_ALIVE_MS = 15_000;
const encoder = new TextEncoder();

/** One SSE frame. `data` is JSON-encoded, so it never contains a raw newline. */
export function sseFrame(event: string, data: unknown, id?: number): Uint8Array {
  return encoder.encode(`${id !== undefined ? `id: ${id}\n` : ""}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

type Sink = { send(chunk: Uint8Array): void; close(): void; closed: boolean };

function makeStream(signal: AbortSignal, start: (sink: Sink) => Promise<() => void>): ReadableStream<Uint8Array> {
  let cleanup: (() => void) | null = null;
  let keepAlive: NodeJS.Timeout | null = null;
  const finish = () => {
    if (keepAlive) clearInterval(keepAlive);
    keepAlive = null;
    cleanup?.();
    cleanup = null;
  };
  return new ReadableStream<Uint8Array>({
    async start(controller) {
      const sink: Sink = {
        closed: false,
        send(chunk) {
          if (this.closed) return;
          try {
            controller.enqueue(chunk);
          } catch {
            this.closed = true;
          }
        },
        close() {
          if (this.closed) return;
          this.closed = true;
          finish();
          try {
            controller.close();
          } catch {
            /* already closed by the client */
          }
        },
      };
      signal.addEventListener("abort", () => sink.close(), { once: true });
      // Tell EventSource how long to wait before reconnecting.
      sink.send(encoder.encode("retry: 2000\n\n"));
      keepAlive = setInterval(() => sink.send(encoder.encode(": keep-alive\n\n")), KEEP_ALIVE_MS);
      try {
        cleanup = await start(sink);
        if (sink.closed) finish();
      } catch (err) {
        sink.send(sseFrame("error", { message: err instanceof Error ? err.message : "stream failed" }));
        sink.close();
      }
    },
    cancel() {
      finish();
    },
  });
}

function eventToWire(e: JobEvent) {
  return {
    jobId: e.jobId,
    seq: e.seq,
    type: e.type,
    status: e.status as JobStatus,
    attempts: e.attempts,
    progress: {
      done: Number(e.done),
      total: e.total === null ? null : Number(e.total),
      unit: e.unit,
      stage: e.stage,
      message: e.message,
    },
    admission: e.admission ?? null,
    at: e.at,
  };
}

export type JobEventWire = ReturnType<typeof eventToWire>;

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
  return makeStream(signal, async (sink) => {
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
      sink.send(sseFrame(kind, eventToWire(e), e.seq));
      // The terminal snapshot carries what the event cannot: result files, error.
      if (isTerminal(e.status as JobStatus)) void finalSnapshot().catch(() => sink.close());
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

/** Every job event of the principal's tenant (all tenants for a platform admin). */
export function openTenantEventStream(principal: Principal, signal: AbortSignal): ReadableStream<Uint8Array> {
  const tenantId = principal.isPlatformAdmin ? undefined : requireTenant(principal);
  return makeStream(signal, async (sink) => {
    return eventHub().subscribe(
      { tenantId },
      (e) => sink.send(sseFrame("job", eventToWire(e), e.seq)),
      () => sink.close(),
    );
  });
}
