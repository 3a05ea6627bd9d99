/**
 * Which addresses an endpoint may reach (SSRF). Only public unicast addresses,
 * unless WEBHOOK_ALLOW_PRIVATE=1 lets loopback and private ranges through for
 * development and tests; link-local (169.254.0.0/16, which holds the cloud
 * metadata service, and fe80::/10) and the other reserved ranges never.
 */
import { BlockList, isIP } from "node:net";

function list(entries: [string, number, "ipv4" | "ipv6"][]): BlockList {
  const b = new BlockList();
  for (const [net, prefix, family] of entries) b.addSubnet(net, prefix, family);
  return b;
}

/** Never, whatever the setting: link-local and metadata, "this network", multicast, reserved, IPv4-in-IPv6 translation. */
const ALWAYS_REFUSED = list([
  ["0.0.0.0", 8, "ipv4"],
  ["169.254.0.0", 16, "ipv4"],
  ["100.100.100.200", 32, "ipv4"], // Alibaba Cloud metadata
  ["192.0.0.0", 24, "ipv4"],
  ["224.0.0.0", 4, "ipv4"],
  ["240.0.0.0", 4, "ipv4"],
  ["::", 128, "ipv6"],
  ["fe80::", 10, "ipv6"],
  ["ff00::", 8, "ipv6"],
  ["fd00:ec2::254", 128, "ipv6"], // AWS metadata over IPv6
  // Translation and tunnelling prefixes carry an IPv4 address inside (a gateway on the way may
  // deliver to it, private or not): NAT64 (well-known and local-use), 6to4, Teredo.
  ["64:ff9b::", 96, "ipv6"],
  ["64:ff9b:1::", 48, "ipv6"],
  ["2002::", 16, "ipv6"],
  ["2001::", 32, "ipv6"],
]);

/** Allowed only with WEBHOOK_ALLOW_PRIVATE=1: loopback, private, shared, benchmark and documentation ranges, ULA. */
const PRIVATE = list([
  ["127.0.0.0", 8, "ipv4"],
  ["10.0.0.0", 8, "ipv4"],
  ["172.16.0.0", 12, "ipv4"],
  ["192.168.0.0", 16, "ipv4"],
  ["100.64.0.0", 10, "ipv4"],
  ["198.18.0.0", 15, "ipv4"],
  ["192.0.2.0", 24, "ipv4"],
  ["198.51.100.0", 24, "ipv4"],
  ["203.0.113.0", 24, "ipv4"],
  ["::1", 128, "ipv6"],
  ["fc00::", 7, "ipv6"],
  ["2001:db8::", 32, "ipv6"],
]);

export type AddressVerdict = { ok: true } | { ok: false; reason: string };

/** IPv4-mapped IPv6 (::ffff:10.0.0.1) is judged as the IPv4 address it carries. */
function unmapped(address: string): { address: string; family: "ipv4" | "ipv6" } {
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (m) return { address: m[1]!, family: "ipv4" };
  return { address, family: isIP(address) === 6 ? "ipv6" : "ipv4" };
}

/** May a delivery connect to this IP address? */
export function judgeAddress(raw: string, allowPrivate: boolean): AddressVerdict {
  if (!isIP(raw)) return { ok: false, reason: `${raw} is not an IP address` };
  const { address, family } = unmapped(raw);
  if (ALWAYS_REFUSED.check(address, family)) {
    return { ok: false, reason: `${raw} is a link-local, metadata, reserved or translated address` };
  }
  if (PRIVATE.check(address, family) && !allowPrivate) {
    return { ok: false, reason: `${raw} is a loopback or private address` };
  }
  return { ok: true };
}
