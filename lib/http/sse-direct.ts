/**
 * An event-stream route answered straight onto the socket by the server `npm start` runs.
 *
 * Why: Next.js pipes a route's ReadableStream body into the response with `pipeTo` and a
 * WritableStream, a chain of promises per frame and per stream (with async_hooks' promise
 * hooks on, as Next.js's AsyncLocalStorage turns them on). One job event is a frame on every
 * open stream: at 1,000 streams that chain, not the database, was most of the time between
 * a commit and its arrival (docs/BENCHMARKS.md, "Live progress"). Here the very same route
 * handler runs — authentication, rate limits, the request log, the stream slot, error
 * answers — and the stream it opens writes its frames to the response with `res.write`
 * (lib/sse/streams.ts, `directOutputs`). Backpressure is the socket's: past
 * DIRECT_BACKLOG_BYTES queued, a stream coalesces as it does on a ReadableStream.
 * scripts/serve.ts sends only Bearer-authenticated requests here: a session cookie is read by
 * Auth.js's auth(), which needs Next.js's request scope, so the console's streams go through Next.js.
 * The headers proxy.ts and next.config.ts add to every response are added here too
 * (the Content-Security-Policy excepted: it governs documents, and a stream is none).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { PathParams } from "../api-doc";
import { env } from "../env";
import { fanOutEnded, fanOutStarted } from "../events/fan-out";
import { apiAnswerHeaders, securityHeaders } from "./security-headers";
import { registerDirectRoute, type DirectOperation } from "./sse-direct-routes";
import { directOutputs, type DirectOutputs, type StreamOutput } from "../sse/streams";

type RouteHandler<P> = (req: Request, ctx: { params: Promise<P> }) => Promise<Response>;

/** Bytes queued on a socket past which its stream coalesces events (a ReadableStream's limit is 64 frames). */
export const DIRECT_BACKLOG_BYTES = 64 * 1024;

type NodeOutput = StreamOutput & { onDrain(flush: () => void): void; open(status: number, headers: Headers): void };

const CRLF = Buffer.from("\r\n");
const chunked = new WeakMap<Uint8Array, Buffer>();

/**
 * A frame as HTTP/1.1's chunked encoding carries it (`<hex length>\r\n<frame>\r\n`), made once
 * per frame: a tenant's event is one frame for all its streams (lib/sse/streams.ts), so at 10,000
 * streams it is framed once and written 10,000 times, one socket write each, where `res.write`
 * made each stream's chunk header and wrote three buffers.
 */
function chunkOf(frame: Uint8Array): Buffer {
  let chunk = chunked.get(frame);
  if (!chunk) {
    chunk = Buffer.concat([Buffer.from(`${frame.byteLength.toString(16)}\r\n`), frame, CRLF]);
    chunked.set(frame, chunk);
  }
  return chunk;
}

type Socket = NonNullable<ServerResponse["socket"]>;

/**
 * Sockets written to and not yet sent, corked, in the order they were first written to: every
 * frame one stream gets before its socket's turn goes out in one `writev`. At 10,000 streams each
 * socket write costs the web process ~10-20 µs of loopback TCP in the kernel (a CPU profile: the
 * writes were most of its time), and events come in bursts (a job's queued, running, progress and
 * succeeded events are notified together; notifications that came while a fan-out ran are read in
 * one go): a burst of k events is one write per stream instead of k. A lone event still costs one
 * write.
 */
const corked = new Set<Socket>();
let uncorking = false;

/**
 * Sockets uncorked (written) per turn of the event loop. One event to 10,000 streams is 150-300 ms
 * of socket writes here; written in one turn, every request the server got meanwhile (a create's
 * POST, a page) waited for all of it (bench:sse: POST → 202 p50 340-430 ms with 10,000 streams
 * open). Between slices the event loop reads what came in; events are held until the last slice
 * (lib/events/fan-out.ts).
 */
export const UNCORK_SLICE = 500;

function uncorkSome(): void {
  let k = 0;
  for (const s of corked) {
    corked.delete(s);
    s.uncork();
    if (++k === UNCORK_SLICE) break;
  }
  if (corked.size) {
    // (Events dispatched in the turn that began the fan-out went into the same corked writes; from
    // here on the hub holds what comes.)
    fanOutStarted();
    return void setImmediate(uncorkSome);
  }
  uncorking = false;
  fanOutEnded();
}

/** Writes `chunk` to `socket` before the end of this turn's fan-out (exported for its test). */
export function corkedWrite(socket: Socket, chunk: Buffer): void {
  if (!uncorking) {
    uncorking = true;
    process.nextTick(uncorkSome);
  }
  if (!corked.has(socket)) {
    corked.add(socket);
    socket.cork();
  }
  socket.write(chunk);
}

function nodeOutput(res: ServerResponse): NodeOutput {
  // Frames made before the handler returned wait for the status line and headers it answers with.
  let pending: Uint8Array[] | null = [];
  let closed = false;
  // Once the headers are out in chunked encoding: frames go to the socket pre-framed (chunkOf).
  let socket: ServerResponse["socket"] = null;
  const gone = () => res.destroyed || res.writableEnded;
  const write = (frame: Uint8Array) => (socket ? corkedWrite(socket, chunkOf(frame)) : res.write(frame));
  return {
    enqueue(chunk) {
      if (closed || gone()) throw new Error("stream closed");
      if (pending) pending.push(chunk);
      else write(chunk);
    },
    // (The response's writableLength counts its socket's backlog too.)
    lagging: () => res.writableLength > DIRECT_BACKLOG_BYTES,
    gone,
    close() {
      if (closed) return;
      closed = true;
      // (res.end writes the last chunk, `0\r\n\r\n`, after the ones written to the socket.)
      if (!pending && !gone()) res.end();
    },
    onDrain(flush) {
      res.on("drain", flush);
      // Written to the socket directly, the response never sees its backlog: the socket's drain.
      const onSocketDrain = () => socket && flush();
      res.socket?.on("drain", onSocketDrain);
      // A kept-alive socket outlives the stream: its listener goes with the response.
      res.once("close", () => res.socket?.off("drain", onSocketDrain));
    },
    open(status, headers) {
      const head = apiAnswerHeaders(env().NODE_ENV === "production", false);
      headers.forEach((v, k) => (head[k] = v));
      res.writeHead(status, head);
      const frames = pending ?? [];
      pending = null;
      res.flushHeaders();
      // (An HTTP/1.0 client gets no chunked encoding: its frames go through res.write as they are.)
      const chunkedEncoding = (res as unknown as { chunkedEncoding?: boolean }).chunkedEncoding === true;
      // (Only once the head is on the socket, not held in the response's own buffer: bytes written
      // to the socket must follow it.)
      const held = res.writableLength - (res.socket?.writableLength ?? 0);
      if (chunkedEncoding && res.socket && !res.socket.destroyed && held === 0) socket = res.socket;
      for (const f of frames) write(f);
      if (closed) res.end();
    },
  };
}

/** Requests whose streams are open (see serveDirectly). */
const held = new Set<Request>();

/** The Fetch API request a route handler takes, for a node:http one (lib/http/api-direct.ts too). */
export function toRequest(
  req: IncomingMessage,
  init: { signal?: AbortSignal; body?: Uint8Array<ArrayBuffer> } = {},
): Request {
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) {
    if (typeof v === "string") headers.set(k, v);
    else if (Array.isArray(v)) for (const x of v) headers.append(k, x);
  }
  return new Request(`http://${req.headers.host ?? "localhost"}${req.url ?? "/"}`, {
    method: req.method,
    headers,
    ...init,
  });
}

/**
 * Registers a GET event-stream route for scripts/serve.ts: `op` is its operation, declared
 * `direct: { kind: "stream" }` (its path template is the matcher, its `{names}` the parameters).
 * Called by the route's module, with its own handler.
 */
export function serveDirectly<const Path extends string>(
  op: DirectOperation & { path: Path },
  handler: RouteHandler<PathParams<Path>>,
): void {
  registerDirectRoute(op, "stream", async (req, res, params) => {
    const abort = new AbortController();
    // The handler's req.signal is the Request's own signal, which follows `abort` through a weak
    // reference to the Request's controller: once the Request is garbage-collected (the handler
    // returned, the stream lives on), a client's disconnect never reached the stream, whose slot,
    // timers and re-check then stayed until its lifetime ended (bench:sse's third run of 1,000 streams
    // met 429 on every stream). The Request is held here until the response closes.
    const request = toRequest(req, { signal: abort.signal });
    res.once("close", () => {
      abort.abort();
      held.delete(request);
    });
    held.add(request);
    res.on("error", () => {});
    let out: NodeOutput | null = null;
    const outputs: DirectOutputs = { open: () => (out = nodeOutput(res)) };
    try {
      const response = await directOutputs.run(outputs, () =>
        handler(request, { params: Promise.resolve(params as PathParams<Path>) }),
      );
      const opened = out as NodeOutput | null;
      if (opened) {
        opened.open(response.status, response.headers);
        return;
      }
      // Refused (401, 404, 429…): the handler's JSON answer.
      const body = Buffer.from(await response.arrayBuffer());
      const head: Record<string, string> = { ...securityHeaders };
      response.headers.forEach((v, k) => (head[k] = v));
      res.writeHead(response.status, head).end(body);
    } catch {
      // withPrincipal answers every error itself; this is a socket gone mid-answer.
      if (!res.headersSent) res.writeHead(500).end();
      else res.destroy();
    }
  });
}
