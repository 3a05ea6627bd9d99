import { test } from "node:test";
import assert from "node:assert/strict";
import { judgeAddress } from "@/lib/webhooks/address";
import { resolvePublic } from "@/lib/webhooks/http";

test("NAT64, 6to4 and Teredo addresses are refused, even where private ones are allowed", () => {
  for (const address of [
    "64:ff9b::a9fe:a9fe", // NAT64 of 169.254.169.254
    "64:ff9b::7f00:1", // NAT64 of 127.0.0.1
    "64:ff9b:1::a00:1", // local-use NAT64
    "2002:a9fe:a9fe::1", // 6to4 of 169.254.169.254
    "2001:0:4136:e378:8000:63bf:3fff:fdd2", // Teredo
  ]) {
    for (const allowPrivate of [false, true]) {
      const verdict = judgeAddress(address, allowPrivate);
      assert.equal(verdict.ok, false, `${address} (allowPrivate: ${allowPrivate})`);
    }
  }
  // Neighbours stay public.
  assert.equal(judgeAddress("2001:4860:4860::8888", false).ok, true);
  assert.equal(judgeAddress("64:ff9c::1", false).ok, true);
});

test("a name that resolves only to refused addresses is refused without telling them", async () => {
  await assert.rejects(resolvePublic("localhost", false), (e: Error) => {
    assert.match(e.message, /^localhost does not resolve to a public address$/);
    return true;
  });
  // An address typed in the URL is named back: it is the caller's own.
  await assert.rejects(resolvePublic("10.1.2.3", false), /10\.1\.2\.3 is a loopback or private address/);
});
