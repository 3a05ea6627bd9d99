/**
 * The slow receiver of `npm run bench:capacity`, a process of its own (so neither the load
 * generator's nor the product's event loop delays what it sees, and its CPU counts apart): a bare
 * node:http server that notes each request's `webhook-id`, path and arrival time, and answers 200
 * after the delay in force. Every 100 ms it samples how many requests it holds open (received, not
 * yet answered). The benchmark drives it over IPC:
 *   { delayMs }  → sets the delay for requests from now on
 *   { take: true } → answers { hits, samples, open } and forgets them
 * Arguments: the port (on 127.0.0.1) and the first delay in ms; it prints `listening <port>` once it listens.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

export type ReceiverHit = { id: string; path: string; at: number };
export type ReceiverSample = { at: number; open: number };
export type ReceiverTake = { hits: ReceiverHit[]; samples: ReceiverSample[]; open: number };

const port = Number(process.argv[2] ?? 0);
let delayMs = Number(process.argv[3] ?? 10_000);
let open = 0;
let hits: ReceiverHit[] = [];
let samples: ReceiverSample[] = [];

const server = http.createServer((req, res) => {
  const at = Date.now();
  open++;
  hits.push({ id: String(req.headers["webhook-id"] ?? ""), path: req.url ?? "", at });
  req.resume(); // the body is not needed: drain it
  setTimeout(() => {
    res.writeHead(200, { "content-type": "text/plain" });
    res.end("ok");
    open--;
  }, delayMs);
});
// Thousands of requests held at once, each for up to the delay: no limit on them.
server.maxConnections = Infinity;
server.keepAliveTimeout = 30_000;
server.requestTimeout = 0;
server.headersTimeout = 60_000;

setInterval(() => samples.push({ at: Date.now(), open }), 100).unref();

process.on("message", (m: { delayMs?: number; take?: boolean }) => {
  if (m.delayMs !== undefined) delayMs = m.delayMs;
  if (m.take) {
    const taken: ReceiverTake = { hits, samples, open };
    hits = [];
    samples = [];
    process.send!(taken);
  }
});
process.on("disconnect", () => process.exit(0));

server.listen(port, "127.0.0.1", () => {
  console.log(`listening ${(server.address() as AddressInfo).port}`);
});
