/**
 * The client side of bench:sse, in its own process: SSE_CLIENTS connections to
 * SSE_URL, stream i (counted from SSE_OFFSET) with the Bearer token
 * SSE_TOKENS[i % tokens], each noting when every `job` event arrives (by the
 * event's job and seq). At most SSE_CONNECTING streams are being opened at once.
 * On SIGUSR2 it writes "<job> <seq> <epoch ms>" per receipt to SSE_OUT, then
 * prints END.
 *
 * SSE_CLIENT picks how a stream is read:
 * - `raw` (the default): a `net` socket that sends the GET itself and, on every read, copies the
 *   bytes into one arena and notes where they went and when they came; the frames are found after
 *   the run. The clients stand for browsers on other machines, but here they share the server's
 *   two cores: every millisecond a client spends parsing or collecting garbage during a fan-out is
 *   one the server waits for or a receipt noted late, and shows in the latency. (Keeping each
 *   read's Buffer instead cost 15-57 ms young-generation collections in every client process,
 *   several a run, as each kept Buffer had to be copied out of the nursery.)
 * - `http`: node:http's client, each read parsed as it comes (the benchmark before 2026-12-02).
 */
import { writeFileSync } from "node:fs";
import http from "node:http";
import net from "node:net";

const url = new URL(process.env.SSE_URL!);
const tokens = process.env.SSE_TOKENS!.split(",");
const n = Number(process.env.SSE_CLIENTS ?? "1");
const offset = Number(process.env.SSE_OFFSET ?? "0");
const connecting = Number(process.env.SSE_CONNECTING ?? "100");
const out = process.env.SSE_OUT!;
const mode = process.env.SSE_CLIENT ?? "raw";
if (mode !== "raw" && mode !== "http") throw new Error(`SSE_CLIENT is raw or http, not ${mode}`);

// Receipts as flat numbers (job index, seq, time): a string per receipt would cost far more
// memory at 10,000 streams.
const jobIndex = new Map<string, number>();
const receipts: number[] = [];
let connected = 0;
let inFlight = 0;
let next = 0;

const JOB = /"jobId":"([^"]+)","seq":(\d+)/;
const now = () => performance.timeOrigin + performance.now();

/** A frame's receipt, if it is a `job` event. */
function note(frame: string, at: number): void {
  if (!frame.includes("event: job")) return;
  const m = JOB.exec(frame);
  if (!m) return;
  let j = jobIndex.get(m[1]!);
  if (j === undefined) jobIndex.set(m[1]!, (j = jobIndex.size));
  receipts.push(j, Number(m[2]), at);
}

function onOpened(): void {
  inFlight--;
  connected++;
  if (connected === n) console.log(`connected ${n}`);
  openMore();
}

function onFailed(i: number, message: string): void {
  inFlight--;
  console.error(`client ${offset + i}: ${message}`);
  openMore();
}

const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });

function openHttp(i: number, token: string): void {
  const req = http.get(
    { host: url.hostname, port: url.port, path: url.pathname, agent, headers: { Authorization: `Bearer ${token}` } },
    (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        return onFailed(i, `HTTP ${res.statusCode}`);
      }
      onOpened();
      let buf = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        const at = now();
        buf += chunk;
        let idx: number;
        while ((idx = buf.indexOf("\n\n")) !== -1) {
          note(buf.slice(0, idx), at);
          buf = buf.slice(idx + 2);
        }
      });
    },
  );
  req.on("error", (e) => onFailed(i, e.message));
}

/** Raw streams' bytes, one after the other as they were read, and per read (`reads`): its stream,
 * where its bytes start and end in the arena, and when it came. Parsed after the run (`parseRaw`). */
let arena = Buffer.allocUnsafe(16 << 20);
let used = 0;
const reads: number[] = [];

function keep(stream: number, chunk: Buffer, at: number): void {
  if (used + chunk.length > arena.length) {
    const bigger = Buffer.allocUnsafe(Math.max(arena.length * 2, used + chunk.length));
    arena.copy(bigger, 0, 0, used);
    arena = bigger;
  }
  chunk.copy(arena, used);
  reads.push(stream, used, (used += chunk.length), at);
}

function openRaw(i: number, token: string): void {
  const socket = net.connect({ host: url.hostname, port: Number(url.port) });
  let head = "";
  let status: "waiting" | "open" | "failed" = "waiting";
  socket.on("connect", () =>
    socket.write(
      `GET ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nAccept: text/event-stream\r\nAuthorization: Bearer ${token}\r\n\r\n`,
    ),
  );
  socket.on("data", (chunk: Buffer) => {
    const at = now();
    if (status === "open") return keep(i, chunk, at);
    if (status === "failed") return;
    head += chunk.toString("latin1");
    const end = head.indexOf("\r\n\r\n");
    if (end === -1) return;
    if (head.startsWith("HTTP/1.1 200 ")) {
      status = "open";
      keep(i, Buffer.from(head.slice(end + 4), "latin1"), at);
      onOpened();
    } else {
      status = "failed";
      socket.destroy();
      onFailed(i, head.slice(0, head.indexOf("\r\n")));
    }
  });
  socket.on("error", (e) => {
    if (status === "waiting") {
      status = "failed";
      onFailed(i, e.message);
    }
  });
}

/** Each raw stream's frames, each at the time of the read that completed it. The body is
 * chunked: a chunk's size line sits before each frame, which `note` looks past. */
function parseRaw(): void {
  const byStream = new Map<number, number[]>();
  for (let r = 0; r < reads.length; r += 4) {
    const mine = byStream.get(reads[r]!) ?? [];
    if (!mine.length) byStream.set(reads[r]!, mine);
    mine.push(r);
  }
  for (const rs of byStream.values()) {
    let text = "";
    const ends: number[] = [];
    const times: number[] = [];
    for (const r of rs) {
      ends.push((text += arena.toString("latin1", reads[r + 1], reads[r + 2])).length);
      times.push(reads[r + 3]!);
    }
    let pos = 0;
    let read = 0;
    let idx: number;
    while ((idx = text.indexOf("\n\n", pos)) !== -1) {
      while (ends[read]! < idx + 2) read++;
      note(text.slice(pos, idx), times[read]!);
      pos = idx + 2;
    }
  }
}

function openMore(): void {
  while (inFlight < connecting && next < n) {
    const i = next++;
    inFlight++;
    const token = tokens[(offset + i) % tokens.length]!;
    if (mode === "raw") openRaw(i, token);
    else openHttp(i, token);
  }
}
openMore();

process.on("SIGUSR2", () => {
  parseRaw();
  const ids = [...jobIndex.keys()];
  const lines: string[] = [];
  for (let k = 0; k < receipts.length; k += 3) lines.push(`${ids[receipts[k]!]} ${receipts[k + 1]} ${receipts[k + 2]}`);
  writeFileSync(out, lines.join("\n") + "\n");
  process.stdout.write("END\n");
});
process.on("SIGTERM", () => process.exit(0));
