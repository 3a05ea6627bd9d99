import { test } from "node:test";
import assert from "node:assert/strict";
import { normalizeAddress, parseTrustProxy, resolveForwarded, throttleAddress } from "@/lib/net";

test("TRUST_PROXY: 0, a number of hops, or a list of addresses and CIDR ranges; anything else is refused", () => {
  assert.deepEqual(parseTrustProxy("0"), { kind: "none" });
  assert.deepEqual(parseTrustProxy("2"), { kind: "hops", hops: 2 });
  const list = parseTrustProxy("10.0.0.0/8, 192.168.1.5,fd00::/8");
  assert.equal(list.kind, "list");
  for (const bad of ["11", "-1", "true", "10.0.0.0/33", "10.0.0.0/8/1", "example.com", "fd00::/129"]) {
    assert.throws(() => parseTrustProxy(bad), Error, bad);
  }
});

test("addresses: IPv4-mapped IPv6 is IPv4, ports and brackets dropped; the throttle counts IPv6 by its /64", () => {
  assert.equal(normalizeAddress("::ffff:203.0.113.7"), "203.0.113.7");
  assert.equal(normalizeAddress("203.0.113.7:4711"), "203.0.113.7");
  assert.equal(normalizeAddress("[2001:DB8::1]:443"), "2001:db8::1");
  assert.equal(normalizeAddress("unknown"), null);
  assert.equal(throttleAddress("203.0.113.7"), "203.0.113.7");
  assert.equal(throttleAddress("2001:db8:1:2:aaaa:bbbb:cccc:dddd"), "2001:db8:1:2::/64");
  assert.equal(throttleAddress("2001:db8:1:2::99"), "2001:db8:1:2::/64");
  assert.equal(throttleAddress("2001:db8::1"), "2001:db8:0:0::/64");
  assert.equal(throttleAddress("::1"), "0:0:0:0::/64");
});

test("the client is found from the right: a client's own X-Forwarded-* entries never count", () => {
  const input = (xff?: string, more: Record<string, string> = {}) => ({
    socketAddress: "::ffff:10.0.0.2",
    encrypted: false,
    headers: { host: "internal:3000", ...(xff ? { "x-forwarded-for": xff } : {}), ...more },
  });
  const none = resolveForwarded(input("6.6.6.6", { "x-forwarded-host": "evil.test" }), parseTrustProxy("0"));
  assert.deepEqual(none, { address: "10.0.0.2", host: "internal:3000", proto: "http", hops: 0 });
  const one = resolveForwarded(
    input("6.6.6.6, 203.0.113.9", { "x-forwarded-host": "evil.test, app.example", "x-forwarded-proto": "http, https" }),
    parseTrustProxy("1"),
  );
  assert.deepEqual(one, { address: "203.0.113.9", host: "app.example", proto: "https", hops: 1 });
  // Fewer entries than hops: the left-most (every entry came from a proxy).
  assert.equal(resolveForwarded(input("203.0.113.9"), parseTrustProxy("3")).address, "203.0.113.9");
  // A list: the peer must be in it for any forwarded header to count.
  assert.equal(resolveForwarded(input("6.6.6.6"), parseTrustProxy("192.168.0.0/16")).address, "10.0.0.2");
  assert.equal(resolveForwarded(input("6.6.6.6, 10.1.2.3"), parseTrustProxy("10.0.0.0/8")).address, "6.6.6.6");
  // Garbage where a proxy should have written an address: the proxy's peer, never the garbage.
  assert.equal(resolveForwarded(input("<script>"), parseTrustProxy("1")).address, "10.0.0.2");
  assert.equal(
    resolveForwarded(input("1.2.3.4", { "x-forwarded-host": "a b" }), parseTrustProxy("1")).host,
    "internal:3000",
  );
});
