/**
 * Who is on the other end of a request: its address, and the host and scheme
 * it asked for, as the web server (scripts/serve.ts) recorded them from the
 * connection and the headers of trusted proxies (TRUST_PROXY, lib/net.ts).
 * The recorded headers are overwritten for every request, so no client can set
 * them; without them (a server other than scripts/serve.ts) nothing forwarded
 * is believed.
 */
import type { IncomingMessage } from "node:http";
import type { TLSSocket } from "node:tls";
import { env } from "../env";
import { resolveForwarded, trustProxyOf } from "../net";

export const CLIENT_ADDRESS_HEADER = "x-conveyor-client-address";
export const CLIENT_HOST_HEADER = "x-conveyor-client-host";
export const CLIENT_PROTO_HEADER = "x-conveyor-client-proto";

/**
 * Resolves a request's client from its connection and forwarded headers, and
 * writes the answer over the headers the app reads: the recorded ones above,
 * and `X-Forwarded-For`, `-Host` and `-Proto` (Next.js and Auth.js read those)
 * — each a single trusted value, whatever the client sent.
 */
export function recordForwarded(req: IncomingMessage): void {
  const forwarded = resolveForwarded(
    {
      socketAddress: req.socket.remoteAddress,
      encrypted: Boolean((req.socket as TLSSocket).encrypted),
      headers: req.headers,
    },
    trustProxyOf(env().TRUST_PROXY),
  );
  req.headers[CLIENT_ADDRESS_HEADER] = forwarded.address;
  req.headers[CLIENT_PROTO_HEADER] = forwarded.proto;
  req.headers["x-forwarded-for"] = forwarded.address;
  req.headers["x-forwarded-proto"] = forwarded.proto;
  if (forwarded.host) {
    req.headers[CLIENT_HOST_HEADER] = forwarded.host;
    req.headers["x-forwarded-host"] = forwarded.host;
  } else {
    delete req.headers[CLIENT_HOST_HEADER];
    delete req.headers["x-forwarded-host"];
  }
}

/** The client's address from request headers; "unknown" when nothing trustworthy says it. */
export function clientAddressFrom(headers: Headers): string {
  return headers.get(CLIENT_ADDRESS_HEADER) || "unknown";
}

/** The host the client asked for: as recorded, else the Host header (a proxy's `X-Forwarded-Host` is never read here). */
export function clientHostFrom(headers: Headers): string | null {
  return headers.get(CLIENT_HOST_HEADER) || headers.get("host");
}
