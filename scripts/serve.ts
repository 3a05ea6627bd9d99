/**
 * The web server `npm start` runs: Next.js's own request handler in a plain
 * node:http server, so that the client's address is known for certain. Next's
 * server keeps an `X-Forwarded-For` a client sends (it only fills it in when
 * missing), which would let anyone choose the address the sign-in throttle and
 * the logs see. Here the address is the connection's — or, behind proxies you
 * run (TRUST_PROXY: hops or their addresses), the `X-Forwarded-For` entry the
 * outermost of them wrote, counted from the right (lib/net.ts) — and it reaches
 * the app as `x-conveyor-client-address` (lib/http/client.ts), which no client
 * can set. `X-Forwarded-Host` and `-Proto` are replaced the same way: what a
 * trusted proxy said, else the connection's own (Auth.js and the CSRF check read them).
 * It listens on HOST (127.0.0.1 unless told otherwise), in WEB_PROCESSES processes sharing the
 * port (node:cluster; one per core unless told otherwise: runPrimary below).
 *   node --import tsx scripts/serve.ts [--dev]
 * In the container image it runs bundled (`web/serve.js`) inside Next's
 * standalone output, beside the traced server files (see Dockerfile).
 */
import cluster from "node:cluster";
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { availableParallelism } from "node:os";
import path from "node:path";
import next from "next";
import { DatabaseConfigError, settleStatements } from "@/lib/pooler";
import { env } from "@/lib/env";
import { logger } from "@/lib/log";
import { capUndeclaredBody, needsBodyCap } from "@/lib/http/body-cap";
import { recordForwarded } from "@/lib/http/client";
import { admit } from "@/lib/http/gate";
import { followParent } from "@/lib/parent";
import { directRouteFor } from "@/lib/http/sse-direct-routes";
import { shutdownTracing } from "@/lib/tracing";

const dev = process.argv.includes("--dev");
const port = env().PORT;
const host = env().HOST;

/**
 * The configuration the build resolved (`.next/required-server-files.json`), as
 * Next's own standalone server.js uses it: the image has no next.config.ts to
 * compile, and `npm start` serves what was built, not a config edited since.
 */
function builtConfig(): Record<string, unknown> {
  const file = path.join(process.cwd(), ".next", "required-server-files.json");
  return (JSON.parse(readFileSync(file, "utf8")) as { config: Record<string, unknown> }).config;
}

async function main(): Promise<void> {
  let conf: Record<string, unknown> | undefined;
  if (!dev) {
    conf = builtConfig();
    // Next reads the standalone config from here (and then does not warn that `next start` is not standalone).
    process.env.__NEXT_PRIVATE_STANDALONE_CONFIG = JSON.stringify(conf);
  }
  await settleDatabase();
  const app = next({ dev, port, hostname: "localhost", ...(conf ? { conf } : {}) });
  await app.prepare();
  const handle = app.getRequestHandler();
  const gate = {
    concurrency: env().WEB_USER_CONCURRENCY,
    queue: env().WEB_USER_QUEUE,
    holdMs: env().REFUSAL_HOLD_MS,
    production: env().NODE_ENV === "production",
  };
  const server = createServer((req, res) => {
    recordForwarded(req);
    // Before anything else: a request whose user (token, session or address) Postgres refused within
    // REFUSAL_MEMORY_MS is answered 429 from memory, and a user's requests take turns, so one user's
    // flood does not hold up everybody else's (lib/http/gate.ts). Next.js sees only what is let on.
    admit(req, res, gate, () => dispatch(req, res));
  });
  const dispatch = (req: IncomingMessage, res: ServerResponse) => {
    // Event streams go onto the socket without Next.js's piping (lib/http/sse-direct.ts), and the API's hot
    // routes are answered by their handlers without Next.js's wrapping (lib/http/api-direct.ts), once their
    // route is loaded. Bearer-authenticated ones only (or a public route): a session cookie is read by
    // Auth.js's auth(), which needs Next.js's request scope.
    const direct = directRouteFor(req, { stream: env().SSE_DIRECT === "1", api: env().API_DIRECT === "1" });
    if (direct) void direct(req, res);
    // A body of no declared length is read here, capped, before Next.js would buffer it (lib/http/body-cap.ts).
    else if (needsBodyCap(req))
      void capUndeclaredBody(req, res, env().MAX_BODY_BYTES).then((capped) => capped && handle(capped, res));
    else void handle(req, res);
  };
  // Idle keep-alive connections live 65 s (Node's default is 5 s): longer than a client's or a load
  // balancer's idle timeout, so a request never lands on a socket the server is closing.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  server.listen(port, host, () =>
    logger.info(
      { port, host },
      `[web] listening on http://${host.includes(":") ? `[${host}]` : host}:${port}${dev ? " (dev)" : ""}`,
    ),
  );
  const stop = () => {
    // The last requests' spans, still batched, go out first (lib/tracing.ts; nothing to do when tracing is off).
    server.close(() => void shutdownTracing().finally(() => process.exit(0)));
    server.closeAllConnections();
    setTimeout(() => process.exit(0), 5_000).unref();
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
  // Started by npm start's supervisor with an IPC channel: stops with it, however it ends.
  followParent(stop);
}

/**
 * Direct or through a pooler (lib/pooler.ts settleStatements()): a configuration that would fail later
 * stops the server now. A database not up yet does not: the server starts, its statements unnamed
 * (safe either way), and the probe is tried again every 5 s.
 */
async function settleDatabase(): Promise<void> {
  const settle = () => settleStatements().then((s) => logger.info(s.line));
  try {
    await settle();
  } catch (err) {
    if (err instanceof DatabaseConfigError) throw err;
    logger.warn({ err }, `[db] could not probe DATABASE_URL (${(err as Error).message}); trying again every 5 s`);
    const retry = setInterval(
      () =>
        void settle().then(
          () => clearInterval(retry),
          (e: Error) => {
            if (!(e instanceof DatabaseConfigError)) return;
            logger.fatal({ err: e }, `[web] fatal: ${e.message}`);
            process.exit(1);
          },
        ),
      5_000,
    );
    retry.unref();
  }
}

/**
 * Several server processes on the one port (node:cluster): WEB_PROCESSES of them (0: one per core;
 * one under --dev, whose compiler is one process's). This process then only starts them and keeps
 * them: the connections are handed out in turn, so one stalled or busy process is not the whole
 * product. What they must agree on is in Postgres (the rate limits, the event streams' caps: docs/
 * ARCHITECTURE.md, "Several hosts"); what each remembers (refusals, a user's turns) is its own, and
 * a refusal it answers from memory is at most REFUSAL_MEMORY_MS stale. A process that dies after it
 * listened is replaced; one that dies before, while the others are still starting, stops them all
 * (a server that cannot start is a fault to report, not to retry). Stopping (SIGTERM, SIGINT, npm
 * start's supervisor gone) stops each process as one server stops, then this one.
 */
function runPrimary(count: number): void {
  let stopping = false;
  const listening = new Set<number>();
  const fork = () => {
    const worker = cluster.fork();
    worker.on("listening", () => listening.add(worker.id));
    worker.on("exit", (code, signal) => {
      const wasUp = listening.delete(worker.id);
      if (stopping) {
        if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0);
        return;
      }
      if (!wasUp) {
        logger.fatal(`[web] a server process exited while starting (${signal ?? code}); stopping`);
        stop(1);
        return;
      }
      logger.error(`[web] a server process exited (${signal ?? code}); starting another`);
      fork();
    });
  };
  const stop = (code = 0) => {
    if (stopping) return;
    stopping = true;
    const workers = Object.values(cluster.workers ?? {});
    if (workers.length === 0) process.exit(code);
    for (const w of workers) w?.process.kill("SIGTERM");
    setTimeout(() => process.exit(code), 6_000).unref();
  };
  for (let i = 0; i < count; i++) fork();
  process.on("SIGTERM", () => stop());
  process.on("SIGINT", () => stop());
  followParent(() => stop());
}

const processes = dev ? 1 : env().WEB_PROCESSES || availableParallelism();
if (processes > 1 && cluster.isPrimary) runPrimary(processes);
else
  main().catch((err: Error) => {
    logger.fatal({ err }, `[web] fatal: ${err.message}`);
    process.exit(1);
  });
