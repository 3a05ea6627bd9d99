/**
 * The web server `npm start` runs: Next.js's own request handler in a plain
 * node:http server, so that the client's address is known for certain. Next's
 * server keeps an `X-Forwarded-For` a client sends (it only fills it in when
 * missing), which would let anyone choose the address the sign-in throttle and
 * the logs see. Here the address is the connection's — or, with TRUST_PROXY=1
 * behind a proxy you run, the first `X-Forwarded-For` entry — and it reaches
 * the app as `x-conveyor-client-address` (lib/http/client.ts), which no client
 * can set.
 *   node --import tsx scripts/serve.ts [--dev]
 */
import { createServer } from "node:http";
import next from "next";
import { env } from "@/lib/env";
import { shutdownTracing } from "@/lib/tracing";

const dev = process.argv.includes("--dev");
const port = env().PORT;
const CLIENT_ADDRESS = "x-conveyor-client-address";

function firstForwarded(header: string | string[] | undefined): string | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  const first = value?.split(",")[0]?.trim();
  return first || undefined;
}

async function main(): Promise<void> {
  const app = next({ dev, port, hostname: "localhost" });
  await app.prepare();
  const handle = app.getRequestHandler();
  const server = createServer((req, res) => {
    const socketAddress = req.socket.remoteAddress ?? "unknown";
    const address =
      env().TRUST_PROXY === "1" ? (firstForwarded(req.headers["x-forwarded-for"]) ?? socketAddress) : socketAddress;
    req.headers[CLIENT_ADDRESS] = address;
    if (env().TRUST_PROXY !== "1") req.headers["x-forwarded-for"] = socketAddress;
    void handle(req, res);
  });
  // Idle keep-alive connections live 65 s (Node's default is 5 s): longer than a client's or a load
  // balancer's idle timeout, so a request never lands on a socket the server is closing.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  server.listen(port, () => console.log(`[web] listening on http://localhost:${port}${dev ? " (dev)" : ""}`));
  const stop = () => {
    // The last requests' spans, still batched, go out first (lib/tracing.ts; nothing to do when tracing is off).
    server.close(() => void shutdownTracing().finally(() => process.exit(0)));
    server.closeAllConnections();
    setTimeout(() => process.exit(0), 5_000).unref();
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}

main().catch((err: Error) => {
  console.error(`[web] fatal: ${err.stack ?? err.message}`);
  process.exit(1);
});
