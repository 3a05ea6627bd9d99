/**
 * The baseline of bench:sse (`--server bare`): what a bare Node.js SSE server costs on this
 * machine, as bare graphile-worker is bench:throughput's and `psql \copy` bench:export's.
 * One process: a node:http server whose every `GET /api/v1/events` is a 200 event stream
 * (no authentication, no slot, no Next.js, no product code), and one pg LISTEN connection
 * on the job events channel whose every notification is framed once (`event: job`, the
 * payload's JSON) and written to every open stream with `res.write`, the idiomatic way.
 * Prints "listening <port>" once it serves.
 */
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import pg from "pg";

// The channel the `jobs` triggers notify (lib/events/payload.ts JOB_EVENTS_CHANNEL), spelt
// out so that this process loads nothing of the product.
const CHANNEL = "conveyor_job_events";

const streams = new Set<ServerResponse>();

const server = createServer((req, res) => {
  if (req.method !== "GET" || req.url !== "/api/v1/events") {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache, no-transform" });
  res.write("retry: 2000\n\n");
  streams.add(res);
  res.once("close", () => streams.delete(res));
});

const listener = new pg.Client({ connectionString: process.env.DATABASE_URL });
listener.on("notification", (msg) => {
  if (!msg.payload) return;
  // The clients find `"jobId":"…","seq":N` in a frame: those two first, then the rest.
  const { jobId, seq, ...rest } = JSON.parse(msg.payload) as { jobId: string; seq: number };
  const frame = `event: job\ndata: ${JSON.stringify({ jobId, seq, ...rest })}\n\n`;
  for (const res of streams) res.write(frame);
});

void (async () => {
  await listener.connect();
  await listener.query(`LISTEN ${CHANNEL}`);
  server.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () =>
    console.log(`listening ${(server.address() as AddressInfo).port}`),
  );
})();
process.on("SIGTERM", () => {
  server.closeAllConnections();
  server.close();
  void listener.end().finally(() => process.exit(0));
});
