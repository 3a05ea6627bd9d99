/**
 * The gate of the server `npm start` runs (scripts/serve.ts): what an API request meets before
 * Next.js, before any route and before any query. Two things, both from this process's memory:
 *  1. **Refusals.** A request whose credential (a bearer token or a session cookie, by its hash), its
 *     user, or its address Postgres refused within the last REFUSAL_MEMORY_MS gets its 429 here, with
 *     `Retry-After` and the rate-limit headers, exactly as the route would have answered it
 *     (lib/auth/rate-limit.ts remembers what Postgres refused: lib/auth/refusal-memory.ts). A flood
 *     past its budget costs the server a header parse and a hash per request, and the database nothing;
 *     and the refusal is held for REFUSAL_HOLD_MS before it is sent (never past the time the budget
 *     frees), so a client sending each request when the last is answered floods at one request per
 *     connection per hold instead of as fast as the cores can refuse.
 *  2. **Turns.** One user's API requests run at most WEB_USER_CONCURRENCY at a time in this process;
 *     the rest wait in memory, in order of arrival (at most WEB_USER_QUEUE of them; past that, 429).
 *     A flood of 20 concurrent requests, refused or allowed, then takes two places, not twenty, and
 *     another user's request starts at once instead of queueing behind all of them. A credential is
 *     grouped under its user once this process has seen it authenticate (lib/http/route.ts); until
 *     then, under itself. Event streams, uploads and downloads, which hold a request open for long,
 *     take no turn (streams have their own fleet-wide caps: lib/sse/admission.ts).
 * Only requests to /api/v1/ that carry a credential pass through here; the rest go straight on.
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import {
  credentialAlias,
  ownerOf,
  quotaKey,
  rateLimitedParts,
  rememberedRefusal,
  type Budget,
  type RememberedAnswer,
} from "../auth/refusal-memory";
import { CLIENT_ADDRESS_HEADER } from "./client";
import { apiAnswerHeaders } from "./security-headers";

export type GateOptions = {
  /** Requests one user runs at once in this process (0: no turns). */
  concurrency: number;
  /** Requests one user may have waiting for a turn in this process. */
  queue: number;
  /** Whether answers carry HSTS (production). */
  production: boolean;
  /** How long a refusal from memory is held before it is answered (REFUSAL_HOLD_MS; 0: at once). */
  holdMs?: number;
};

type Turns = { running: number; waiting: (() => void)[] };

const turnsKey = Symbol.for("conveyor.gate.turns");
const store = globalThis as unknown as { [turnsKey]?: Map<string, Turns> };
const turns = () => (store[turnsKey] ??= new Map());

/** What the gate has done in this process (tests, and the metrics a maintainer may want). */
export const gateCounts = { refusedFromMemory: 0, held: 0, queued: 0, refusedQueueFull: 0 };

/** Requests that hold their place for long and take no turn: event streams, uploads, downloads. */
function takesNoTurn(req: IncomingMessage, pathname: string): boolean {
  return (
    pathname.endsWith("/events") ||
    pathname.endsWith("/download") ||
    pathname.startsWith("/api/v1/uploads") ||
    /text\/event-stream/.test(String(req.headers.accept ?? ""))
  );
}

const SANE_REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

function answer429(
  req: IncomingMessage,
  res: ServerResponse,
  production: boolean,
  body: { code: string; message: string; details?: unknown },
  headers: Record<string, string>,
): void {
  const given = String(req.headers["x-request-id"] ?? "").trim();
  const payload = JSON.stringify({ error: body });
  // The request's body is not read: drained, so the connection can carry the next request.
  req.resume();
  res.on("error", () => {});
  res
    .writeHead(429, {
      ...apiAnswerHeaders(production),
      ...headers,
      "Content-Type": "application/json",
      "Content-Length": Buffer.byteLength(payload),
      "X-Request-Id": SANE_REQUEST_ID.test(given) ? given : randomUUID(),
    })
    .end(payload);
}

/** A refusal from memory, held (never past `until`, when it runs out) before it is sent. */
function held(res: ServerResponse, opts: GateOptions, until: number, refuse: () => void): void {
  const send = () => {
    if (!res.destroyed && !res.writableEnded) refuse();
  };
  // A closed-loop flood then sends a request per connection per hold, not as many as the cores can refuse.
  const hold = Math.min(opts.holdMs ?? 0, until - Date.now());
  if (hold <= 0) return send();
  gateCounts.held++;
  setTimeout(send, hold).unref();
}

/** A remembered answer (a quota's 429) sent again, with a request id of its own. */
function replay(req: IncomingMessage, res: ServerResponse, answer: RememberedAnswer): void {
  const given = String(req.headers["x-request-id"] ?? "").trim();
  req.resume();
  res.on("error", () => {});
  res
    .writeHead(answer.status, {
      ...answer.headers,
      "Content-Length": Buffer.byteLength(answer.body),
      "X-Request-Id": SANE_REQUEST_ID.test(given) ? given : randomUUID(),
    })
    .end(answer.body);
}

/**
 * Lets `req` on (`go`) now, later (its user's turn), or answers it 429 from memory. `go` is called
 * at most once; a request whose client went away while it waited is dropped without running.
 */
export function admit(req: IncomingMessage, res: ServerResponse, opts: GateOptions, go: () => void): void {
  const url = req.url ?? "/";
  if (!url.startsWith("/api/v1/")) return go();
  const alias = credentialAlias(req.headers.authorization, req.headers.cookie);
  if (!alias) return go();
  const method = req.method ?? "GET";
  const budget: Budget = method === "GET" || method === "HEAD" || method === "OPTIONS" ? "reads" : "writes";
  const owner = ownerOf(alias);

  // 1. Refused from memory: the credential, its user, or (refused credentials) its address.
  const address = String(req.headers[CLIENT_ADDRESS_HEADER] ?? "unknown");
  let refusedBudget: Budget = budget;
  let memo = rememberedRefusal(`${budget}:${alias}`) ?? (owner ? rememberedRefusal(`${budget}:${owner}`) : null);
  if (!memo) {
    memo = rememberedRefusal(`anonymous:address:${address}`);
    refusedBudget = "anonymous";
  }
  if (memo) {
    gateCounts.refusedFromMemory++;
    const { until, limit } = memo;
    return held(res, opts, until, () => {
      const retryAfter = Math.max(1, Math.ceil((until - Date.now()) / 1000));
      const { message, details, headers } = rateLimitedParts(refusedBudget, limit, retryAfter);
      answer429(req, res, opts.production, { code: "rate_limited", message, details }, headers);
    });
  }
  // A create this route refused for a quota (its user's or tenant's unfinished jobs), remembered with
  // its answer: the same route is answered so again, held, until the memory runs out.
  const q0 = url.indexOf("?");
  const pathname = q0 === -1 ? url : url.slice(0, q0);
  const quota =
    rememberedRefusal(quotaKey(method, pathname, alias)) ??
    (owner ? rememberedRefusal(quotaKey(method, pathname, owner)) : null);
  if (quota?.answer) {
    gateCounts.refusedFromMemory++;
    const answer = quota.answer;
    return held(res, opts, quota.until, () => replay(req, res, answer));
  }

  // 2. Turns.
  if (opts.concurrency === 0 || takesNoTurn(req, pathname)) return go();
  const key = owner ?? alias;
  const all = turns();
  let mine = all.get(key);
  if (!mine) all.set(key, (mine = { running: 0, waiting: [] }));
  const t = mine;
  const start = () => {
    t.running++;
    let done = false;
    res.once("close", () => {
      if (done) return;
      done = true;
      t.running--;
      // The next of this user's waiting requests whose client is still there takes the turn.
      while (t.running < opts.concurrency && t.waiting.length) t.waiting.shift()!();
      if (t.running === 0 && t.waiting.length === 0 && all.get(key) === t) all.delete(key);
    });
    go();
  };
  if (t.running < opts.concurrency) return start();
  if (t.waiting.length >= opts.queue) {
    gateCounts.refusedQueueFull++;
    const message = `Too many requests at once: at most ${opts.concurrency} running and ${opts.queue} waiting per user; try again in 1 s`;
    return answer429(req, res, opts.production, { code: "rate_limited", message }, { "Retry-After": "1" });
  }
  gateCounts.queued++;
  t.waiting.push(() => {
    if (res.destroyed || req.destroyed || res.writableEnded) return;
    start();
  });
}
