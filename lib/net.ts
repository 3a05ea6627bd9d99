/**
 * Who is on the other end of a connection, when proxies stand between: the
 * trust setting (`TRUST_PROXY`) and what it makes of the `X-Forwarded-*`
 * headers. A proxy appends the address it saw to `X-Forwarded-For`, so only the
 * right-most entries were written by proxies you run; whatever stands left of
 * them the client wrote itself. So the client's address is found from the
 * right: past N trusted hops (`TRUST_PROXY=2`), or past every address in a
 * trusted list (`TRUST_PROXY=10.0.0.0/8,fd00::/8`). `X-Forwarded-Host` and
 * `-Proto` count only when a trusted proxy sent the request, and then the entry
 * of the outermost trusted proxy. No I/O here: scripts/serve.ts applies it to
 * every request, lib/http/client.ts reads what it recorded.
 */
import { BlockList, isIP } from "node:net";

export type TrustProxy = { kind: "none" } | { kind: "hops"; hops: number } | { kind: "list"; list: BlockList };

/** The most hops `TRUST_PROXY` may name (a longer chain of your own proxies is a list's job). */
export const MAX_TRUSTED_HOPS = 10;

/** An IPv4-mapped IPv6 address (`::ffff:1.2.3.4`) as the IPv4 address it is; brackets and ports dropped; null: not an address. */
export function normalizeAddress(raw: string): string | null {
  let s = raw.trim();
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(s);
  if (bracketed) s = bracketed[1]!;
  else if (/^\d{1,3}(\.\d{1,3}){3}:\d+$/.test(s)) s = s.slice(0, s.lastIndexOf(":"));
  const zone = s.indexOf("%");
  if (zone >= 0) s = s.slice(0, zone);
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(s);
  if (mapped) s = mapped[1]!;
  const family = isIP(s);
  if (family === 0) return null;
  return family === 6 ? s.toLowerCase() : s;
}

/**
 * `TRUST_PROXY` read: `0` (no proxy: the connection's address), a number of
 * hops (1 to 10), or a comma-separated list of proxy addresses and CIDR ranges.
 * Throws on anything else (lib/env.ts checks it at start).
 */
export function parseTrustProxy(setting: string): TrustProxy {
  const s = setting.trim();
  if (s === "" || s === "0") return { kind: "none" };
  if (/^\d+$/.test(s)) {
    const hops = Number(s);
    if (hops < 1 || hops > MAX_TRUSTED_HOPS) throw new Error(`must be 0 to ${MAX_TRUSTED_HOPS} hops, or a list`);
    return { kind: "hops", hops };
  }
  const list = new BlockList();
  for (const part of s.split(",")) {
    const [addr, prefix, extra] = part.trim().split("/");
    const ip = addr ? normalizeAddress(addr) : null;
    if (!ip || extra !== undefined) throw new Error(`"${part.trim()}" is not an address or a CIDR range`);
    const type = isIP(ip) === 6 ? "ipv6" : "ipv4";
    if (prefix === undefined) {
      list.addAddress(ip, type);
    } else {
      const bits = Number(prefix);
      if (!/^\d+$/.test(prefix) || bits > (type === "ipv6" ? 128 : 32)) {
        throw new Error(`"${part.trim()}" has a bad prefix length`);
      }
      list.addSubnet(ip, bits, type);
    }
  }
  return { kind: "list", list };
}

const trustCache = new Map<string, TrustProxy>();

/** parseTrustProxy, remembered per setting (it runs for every request). */
export function trustProxyOf(setting: string): TrustProxy {
  let trust = trustCache.get(setting);
  if (!trust) {
    trust = parseTrustProxy(setting);
    trustCache.set(setting, trust);
  }
  return trust;
}

function isTrusted(list: BlockList, address: string): boolean {
  return list.check(address, isIP(address) === 6 ? "ipv6" : "ipv4");
}

const entries = (header: string | string[] | undefined): string[] =>
  (Array.isArray(header) ? header.join(",") : (header ?? ""))
    .split(",")
    .map((e) => e.trim())
    .filter(Boolean);

/** The entry the outermost of `hops` appending proxies wrote: `hops` from the right, or the left-most. */
const outermost = (list: string[], hops: number): string | undefined => list[Math.max(0, list.length - hops)];

export type ForwardedInput = {
  /** The connection's peer (req.socket.remoteAddress). */
  socketAddress: string | undefined;
  /** Whether the connection itself is TLS. */
  encrypted: boolean;
  headers: {
    host?: string | string[];
    "x-forwarded-for"?: string | string[];
    "x-forwarded-host"?: string | string[];
    "x-forwarded-proto"?: string | string[];
  };
};

export type Forwarded = {
  /** The client's address ("unknown" when the connection has none). */
  address: string;
  /** The host the client asked for, as a trusted proxy says (else the Host header); null when none is usable. */
  host: string | null;
  proto: "http" | "https";
  /** How many trusted proxies the request came through (0: straight from the client). */
  hops: number;
};

const HOST = /^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/;

/** The client's address, host and scheme, from the connection and the headers trusted proxies wrote. */
export function resolveForwarded(input: ForwardedInput, trust: TrustProxy): Forwarded {
  const socket = (input.socketAddress && normalizeAddress(input.socketAddress)) || "unknown";
  const directHost = entries(input.headers.host)[0] ?? null;
  const direct: Forwarded = {
    address: socket,
    host: directHost && HOST.test(directHost) ? directHost : null,
    proto: input.encrypted ? "https" : "http",
    hops: 0,
  };
  if (trust.kind === "none") return direct;
  // The chain as the proxies wrote it, nearest last: X-Forwarded-For's entries, then the connection's peer.
  const chain = [...entries(input.headers["x-forwarded-for"]), socket];
  let i: number;
  if (trust.kind === "hops") {
    i = Math.max(0, chain.length - 1 - trust.hops);
  } else {
    i = chain.length - 1;
    while (i > 0) {
      const hop = normalizeAddress(chain[i]!);
      if (!hop || !isTrusted(trust.list, hop)) break;
      i--;
    }
  }
  const hops = chain.length - 1 - i;
  if (hops === 0) return direct;
  const address = normalizeAddress(chain[i]!);
  const host = outermost(entries(input.headers["x-forwarded-host"]), hops);
  const proto = outermost(entries(input.headers["x-forwarded-proto"]), hops)?.toLowerCase();
  return {
    // Not an address (a proxy that writes names or "unknown"): the nearest trusted proxy's peer, never the client's word.
    address: address ?? socket,
    host: host && HOST.test(host) ? host : direct.host,
    proto: proto === "https" || proto === "http" ? proto : direct.proto,
    hops,
  };
}

/**
 * The part of an address the sign-in throttle counts by: an IPv4 address whole,
 * an IPv6 address by its /64 (one subscriber's network: anyone given a /64 has
 * 2^64 addresses to rotate through).
 */
export function throttleAddress(address: string): string {
  const ip = normalizeAddress(address);
  if (!ip || isIP(ip) === 4) return ip ?? address;
  return `${expandIPv6(ip).slice(0, 4).join(":")}::/64`;
}

/** The eight hextets of an IPv6 address, without leading zeros. */
function expandIPv6(ip: string): string[] {
  let s = ip;
  // An embedded IPv4 tail (::1.2.3.4) as its two hextets.
  const v4 = /(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(s);
  if (v4) {
    const [a, b, c, d] = v4.slice(1).map(Number) as [number, number, number, number];
    s = s.slice(0, v4.index) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = s.split("::");
  const left = head ? head.split(":") : [];
  const right = tail !== undefined && tail !== "" ? tail.split(":") : [];
  const missing = tail === undefined ? 0 : 8 - left.length - right.length;
  return [...left, ...Array<string>(missing).fill("0"), ...right].map((h) => parseInt(h, 16).toString(16));
}

/** The host to reach a server listening on `host` from this machine: every interface is reached on localhost. */
export function localHostOf(host: string): string {
  if (host === "0.0.0.0" || host === "::" || host === "127.0.0.1" || host === "localhost") return "localhost";
  return host.includes(":") ? `[${host}]` : host;
}
