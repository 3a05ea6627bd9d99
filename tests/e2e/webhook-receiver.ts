import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";

// The e2e server runs with WEBHOOK_ALLOW_PRIVATE=1 (endpoints on the loopback) and WEBHOOK_RETRY_SCALE=0.001
// (retries in milliseconds): a receiver in the spec's process gets the deliveries.

export type Received = { path: string; headers: IncomingHttpHeaders; body: string };

/** A tiny HTTP receiver on 127.0.0.1: answers 200 `{"received":true}`, or 500 while `failing`. */
export async function startReceiver() {
  const received: Received[] = [];
  const state = { failing: false };
  const server: Server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => (body += chunk));
    req.on("end", () => {
      received.push({ path: req.url ?? "", headers: req.headers, body });
      if (state.failing) {
        res.writeHead(500, { "content-type": "text/plain", "x-receiver": "e2e" });
        res.end("receiver down for maintenance");
      } else {
        res.writeHead(200, { "content-type": "application/json", "x-receiver": "e2e" });
        res.end(JSON.stringify({ received: true }));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path: string) => `http://127.0.0.1:${port}${path}`,
    received,
    state,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
