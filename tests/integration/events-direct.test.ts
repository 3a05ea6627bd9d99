/**
 * The event-stream routes as the server `npm start` runs serves them once loaded: straight
 * onto the socket (lib/http/sse-direct.ts), through the same route handlers. Here a node:http
 * server dispatches as scripts/serve.ts does (directRoute), with real HTTP clients.
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import net from "node:net";
import v8 from "node:v8";
import vm from "node:vm";
import type { AddressInfo } from "node:net";
import { createApiTokenForEmail } from "@/lib/auth/tokens";
import { pool } from "@/lib/db";
import { requestExport } from "@/lib/exports/service";
import { directRoute } from "@/lib/http/sse-direct-routes";
import { corkedWrite, UNCORK_SLICE } from "@/lib/http/sse-direct";
import { afterFanOut } from "@/lib/events/fan-out";
import { eventHub } from "@/lib/events/hub";
import { useTestDatabase } from "../helpers/db";
import { drainJobs } from "../helpers/fixtures";

type Frame = { event: string; data: { jobId?: string; status?: string; seq?: number } };

let server: http.Server;
let base: string;
let token: string;

const fx = useTestDatabase({ setup: start });

async function start(): Promise<void> {
  // The route modules register themselves, as when Next.js first loads them.
  await import("@/app/api/v1/events/route");
  await import("@/app/api/v1/jobs/[id]/events/route");
  server = http.createServer((req, res) => {
    const direct = directRoute(req.url ?? "/");
    if (direct) void direct(req, res);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  token = await createApiTokenForEmail("ada@acme.test", "events-direct", "acme");
}

after(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

/**
 * A GET held open: its status, headers, and the frames read until `stop` says so (or it ends).
 * `onOpen` is told when its head arrives.
 */
function stream(
  path: string,
  auth: string,
  stop: (f: Frame[]) => boolean,
  onOpen?: () => void,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; frames: Frame[]; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${base}${path}`, { headers: { Authorization: `Bearer ${auth}` } }, (res) => {
      onOpen?.();
      const frames: Frame[] = [];
      let buf = "";
      let body = "";
      const done = () => resolve({ status: res.statusCode!, headers: res.headers, frames, body });
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        body += chunk;
        buf += chunk;
        let idx: number;
        while ((idx = buf.indexOf("\n\n")) !== -1) {
          const raw = buf.slice(0, idx);
          buf = buf.slice(idx + 2);
          const event = /^event: (.*)$/m.exec(raw)?.[1];
          const data = /^data: (.*)$/m.exec(raw)?.[1];
          if (event && data) frames.push({ event, data: JSON.parse(data) as Frame["data"] });
        }
        if (stop(frames)) {
          req.destroy();
          done();
        }
      });
      res.on("end", done);
    });
    req.on("error", (e) => (req.destroyed ? undefined : reject(e)));
  });
}

/**
 * Opens `path` and resolves once its stream follows events: its head has arrived (its handler has
 * added its listener to this process's hub by then) and the hub's LISTEN is in place (a subscribe
 * resolves only then). A fixed wait instead missed a cold first stream's events under load.
 */
async function following(path: string, stop: (f: Frame[]) => boolean) {
  let opened!: () => void;
  const open = new Promise<void>((r) => (opened = r));
  const reading = stream(path, token, stop, opened);
  await open;
  const off = await eventHub().subscribe({ tenantId: fx.p.acmeId }, () => {});
  off();
  return { reading }; // (wrapped: an async function returning the promise would wait for the stream's end)
}

async function openSlots(): Promise<number> {
  const { rows } = await pool().query<{ n: number }>("SELECT count(*)::int AS n FROM sse_streams");
  return rows[0]!.n;
}

describe("event streams on the socket (the server npm start runs)", () => {
  test("the tenant stream: SSE headers and the security headers, then the tenant's job events; its slot is freed when the client goes", async () => {
    let jobId = "";
    const { reading } = await following("/api/v1/events", (f) =>
      f.some((x) => x.data.jobId === jobId && x.data.status === "succeeded"),
    );
    jobId = (await requestExport(fx.p.ada, { dataset: "customers" })).job.id;
    await drainJobs();
    const { status, headers, frames } = await reading;
    assert.equal(status, 200);
    assert.match(String(headers["content-type"]), /^text\/event-stream/);
    assert.equal(headers["cache-control"], "no-cache, no-transform");
    assert.equal(headers["x-content-type-options"], "nosniff");
    assert.equal(headers["x-frame-options"], "DENY");
    assert.ok(headers["x-request-id"], "the request id is answered");
    assert.ok(frames.every((f) => f.event === "job"));
    assert.ok(frames.some((f) => f.data.jobId === jobId && f.data.status === "queued"));
    for (let i = 0; i < 50 && (await openSlots()) > 0; i++) await new Promise((r) => setTimeout(r, 50));
    assert.equal(await openSlots(), 0, "the stream's slot is released");
  });

  test("a burst of events (one transaction's) goes to each stream in one socket write, in order", async () => {
    // At 10,000 streams a socket write is what a fan-out costs; a job's events come in bursts.
    const { job } = await requestExport(fx.p.ada, { dataset: "customers" });
    const mine = (f: Frame[]) => f.filter((x) => x.data.jobId === job.id && x.event === "job");
    const readers = [1, 2].map(() => stream("/api/v1/events", token, (f) => mine(f).length >= 5));
    await new Promise((r) => setTimeout(r, 300)); // subscribed
    // The frames about this job in each socket write of this process (both streams' server sides).
    const perWrite: number[] = [];
    const count = (data: Buffer | string) => {
      const n = String(data).split(`"jobId":"${job.id}"`).length - 1;
      if (n > 0) perWrite.push(n);
    };
    const proto = net.Socket.prototype as unknown as {
      _write(chunk: Buffer, enc: BufferEncoding, cb: () => void): void;
      _writev(chunks: { chunk: Buffer }[], cb: () => void): void;
    };
    const { _write, _writev } = proto;
    proto._write = function (chunk, enc, cb) {
      count(chunk);
      return _write.call(this, chunk, enc, cb);
    };
    proto._writev = function (chunks, cb) {
      count(Buffer.concat(chunks.map((c) => Buffer.from(c.chunk))));
      return _writev.call(this, chunks, cb);
    };
    try {
      const c = await pool().connect();
      try {
        await c.query("BEGIN");
        for (let i = 0; i < 5; i++)
          await c.query("UPDATE jobs SET progress_done = progress_done + 1, updated_at = now() WHERE id = $1", [
            job.id,
          ]);
        await c.query("COMMIT");
      } finally {
        c.release();
      }
      for (const { status, frames } of await Promise.all(readers)) {
        assert.equal(status, 200);
        const seqs = mine(frames).map((f) => f.data.seq!);
        assert.equal(seqs.length, 5);
        assert.deepEqual(
          seqs,
          [...seqs].sort((a, b) => a - b),
          "in the order they were committed",
        );
      }
    } finally {
      proto._write = _write;
      proto._writev = _writev;
    }
    assert.deepEqual(perWrite, [5, 5], "one write of all five frames per stream");
  });

  test("a fan-out to many streams is written a slice at a time, the event loop free between slices", async () => {
    // One event to 10,000 streams is 150-300 ms of socket writes; in one turn, every request that
    // came meanwhile (a create's POST) waited for all of it. Real sockets, as the fan-out writes them.
    const n = UNCORK_SLICE * 2 + 100;
    const accepted: net.Socket[] = [];
    const fanOut = net.createServer((s) => accepted.push(s));
    await new Promise<void>((resolve) => fanOut.listen(0, "127.0.0.1", resolve));
    const port = (fanOut.address() as AddressInfo).port;
    const received: string[] = Array.from({ length: n }, () => "");
    const clients: net.Socket[] = [];
    try {
      for (let i = 0; i < n; i += 100) {
        await Promise.all(
          Array.from({ length: Math.min(100, n - i) }, (_, k) => {
            const c = net.connect(port, "127.0.0.1");
            c.setEncoding("latin1");
            c.on("data", (d: string) => (received[i + k] += d));
            clients.push(c);
            return new Promise((r) => c.once("connect", r));
          }),
        );
      }
      while (accepted.length < n) await new Promise((r) => setTimeout(r, 10));
      // A burst of two frames to every stream, as the hub dispatches it in one turn.
      for (const s of accepted) corkedWrite(s, Buffer.from("a"));
      for (const s of accepted) corkedWrite(s, Buffer.from("b"));
      const stillCorked = () => accepted.filter((s) => s.writableCorked > 0).length;
      // Events dispatched in the same turn join the same writes; after the first slice, one that
      // arrives is held until every socket is written (the hub's part).
      assert.equal(
        afterFanOut(() => {}),
        false,
      );
      let corkedWhenHeldRan = -1;
      const seen = [stillCorked()];
      while (seen.at(-1)! > 0 && seen.length < 10) {
        await new Promise((r) => setImmediate(r)); // what else the event loop has to do
        seen.push(stillCorked());
        if (seen.length === 2)
          assert.equal(
            afterFanOut(() => (corkedWhenHeldRan = stillCorked())),
            true,
          );
      }
      assert.deepEqual(seen, [n, n - UNCORK_SLICE, n - 2 * UNCORK_SLICE, 0], "a slice per turn, others run between");
      assert.equal(corkedWhenHeldRan, 0, "held events are dispatched after the last slice");
      assert.equal(
        afterFanOut(() => {}),
        false,
        "no fan-out under way",
      );
      // Every stream got both frames, in order.
      for (let i = 0; i < 100 && received.some((r) => r !== "ab"); i++) await new Promise((r) => setTimeout(r, 20));
      assert.equal(received.filter((r) => r === "ab").length, n);
    } finally {
      for (const c of clients) c.destroy();
      await new Promise((r) => fanOut.close(r));
    }
  });

  test("a client that goes away frees its slot even after its Request was garbage-collected", async () => {
    // The stream follows the Request's signal, which follows the socket's through a weak reference:
    // with the Request collected and no abort reaching the stream, the slot stayed until its lifetime.
    v8.setFlagsFromString("--expose-gc");
    const gc = vm.runInNewContext("gc") as () => void;
    const client = await new Promise<http.ClientRequest>((resolve, reject) => {
      const req = http.get(`${base}/api/v1/events`, { headers: { Authorization: `Bearer ${token}` } }, (res) => {
        assert.equal(res.statusCode, 200);
        res.once("data", () => resolve(req)); // the `retry:` line: the stream is open
      });
      req.on("error", (e) => (req.destroyed ? undefined : reject(e)));
    });
    assert.equal(await openSlots(), 1);
    for (let i = 0; i < 5; i++) {
      gc();
      await new Promise((r) => setTimeout(r, 20));
    }
    client.destroy(); // no event follows: nothing is written that could fail
    for (let i = 0; i < 40 && (await openSlots()) > 0; i++) await new Promise((r) => setTimeout(r, 50));
    assert.equal(await openSlots(), 0, "the stream's slot is released");
  });

  test("a job stream: a snapshot, its events, the terminal snapshot, then the end", async () => {
    const { job } = await requestExport(fx.p.ada, { dataset: "events", format: "csv" });
    const reading = stream(`/api/v1/jobs/${job.id}/events`, token, () => false);
    await new Promise((r) => setTimeout(r, 300));
    await drainJobs();
    const { status, frames } = await reading; // ends by itself after the terminal snapshot
    assert.equal(status, 200);
    assert.equal(frames[0]?.event, "snapshot");
    assert.equal(frames.at(-1)?.event, "snapshot");
    assert.equal(frames.at(-1)?.data.status, "succeeded");
  });

  test("refusals are the handler's JSON answers: an unknown token, another tenant's job", async () => {
    const bad = await stream("/api/v1/events", "cvr_not-a-token", () => false);
    assert.equal(bad.status, 401);
    assert.equal((JSON.parse(bad.body) as { error: { code: string } }).error.code, "unauthorized");
    const { job } = await requestExport(fx.p.gus, { dataset: "customers" });
    const hidden = await stream(`/api/v1/jobs/${job.id}/events`, token, () => false);
    assert.equal(hidden.status, 404);
    assert.equal(await openSlots(), 0);
    await drainJobs();
  });
});
