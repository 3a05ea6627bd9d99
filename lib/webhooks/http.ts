/**
 * One webhook request: resolve the host once, refuse addresses an endpoint may
 * not reach (address.ts), connect to exactly the address judged (so a DNS
 * answer that changes between check and connect cannot redirect it), never
 * follow a redirect, stop at the timeout, keep the first 4 KiB of the answer.
 */
import { lookup as dnsLookup } from "node:dns/promises";
import http from "node:http";
import https from "node:https";
import { isIP, type LookupFunction } from "node:net";
import { judgeAddress } from "./address";

export const RESPONSE_BODY_LIMIT = 4096;

export type SendResult = {
  startedAt: Date;
  durationMs: number;
  /** null: no HTTP answer (refused address, DNS, connection, timeout). */
  statusCode: number | null;
  headers: Record<string, string> | null;
  body: string | null;
  error: string | null;
};

export class AddressRefused extends Error {}

/** Resolves `host` and returns the first address a delivery may connect to, or throws AddressRefused. */
export async function resolvePublic(host: string, allowPrivate: boolean): Promise<{ address: string; family: number }> {
  const bare = host.replace(/^\[|\]$/g, "");
  const answers = isIP(bare)
    ? [{ address: bare, family: isIP(bare) }]
    : await dnsLookup(bare, { all: true, verbatim: true });
  const reasons: string[] = [];
  for (const a of answers) {
    const verdict = judgeAddress(a.address, allowPrivate);
    if (verdict.ok) return a;
    reasons.push(verdict.reason);
  }
  // An address typed in the URL is the caller's own; what a name resolves to is not told
  // (it would map the private network for whoever registers endpoints).
  if (isIP(bare)) throw new AddressRefused(reasons[0]!);
  throw new AddressRefused(`${host} does not resolve to a public address`);
}

export async function send(opts: {
  url: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  allowPrivate: boolean;
  signal?: AbortSignal;
}): Promise<SendResult> {
  const startedAt = new Date();
  const t0 = performance.now();
  const done = (r: Omit<SendResult, "startedAt" | "durationMs">): SendResult => ({
    startedAt,
    durationMs: Math.round(performance.now() - t0),
    ...r,
  });
  const url = new URL(opts.url);
  let pinned: { address: string; family: number };
  try {
    pinned = await resolvePublic(url.hostname, opts.allowPrivate);
  } catch (e) {
    return done({ statusCode: null, headers: null, body: null, error: (e as Error).message });
  }
  // The connection goes to the address judged above, whatever DNS says now.
  const lookup: LookupFunction = (_host, options, cb) => {
    if ((options as { all?: boolean }).all) cb(null, [pinned] as never);
    else cb(null, pinned.address, pinned.family);
  };
  const signal = AbortSignal.any([AbortSignal.timeout(opts.timeoutMs), ...(opts.signal ? [opts.signal] : [])]);
  const client = url.protocol === "https:" ? https : http;
  return new Promise<SendResult>((resolve) => {
    let settled = false;
    const finish = (r: Omit<SendResult, "startedAt" | "durationMs">) => {
      if (settled) return;
      settled = true;
      resolve(done(r));
    };
    const req = client.request(
      url,
      {
        method: "POST",
        headers: { ...opts.headers, "content-length": Buffer.byteLength(opts.body) },
        lookup,
        signal,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(res.headers)) {
          if (v !== undefined) headers[k] = (Array.isArray(v) ? v.join(", ") : v).slice(0, 1024);
        }
        const complete = () =>
          finish({
            statusCode: res.statusCode ?? null,
            headers,
            body: Buffer.concat(chunks).subarray(0, RESPONSE_BODY_LIMIT).toString("utf8"),
            error: null,
          });
        res.on("data", (c: Buffer) => {
          if (size < RESPONSE_BODY_LIMIT) chunks.push(c);
          size += c.length;
          if (size >= RESPONSE_BODY_LIMIT) {
            complete();
            res.destroy();
          }
        });
        res.on("end", complete);
        res.on("error", complete);
        res.on("close", complete);
      },
    );
    req.on("error", (e) => {
      const timedOut = signal.aborted && !opts.signal?.aborted;
      finish({
        statusCode: null,
        headers: null,
        body: null,
        error: timedOut ? `No answer within ${opts.timeoutMs} ms` : e.message,
      });
    });
    req.end(opts.body);
  });
}
