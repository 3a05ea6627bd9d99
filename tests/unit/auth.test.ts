import { test } from "node:test";
import assert from "node:assert/strict";
import { hashPassword, needsRehash, verifyPassword } from "@/lib/auth/password";
import { isUuid } from "@/lib/ids";

test("passwords verify against their scrypt hash only", async () => {
  const hash = await hashPassword("conveyor-demo");
  // OWASP's scrypt parameters (N=2^15, r=8, p=3); the earlier N=2^14, p=1 is below them.
  assert.match(hash, /^scrypt\$32768\$8\$3\$/);
  assert.equal(needsRehash(hash), false);
  assert.equal(await verifyPassword("conveyor-demo", hash), true);
  assert.equal(await verifyPassword("conveyor-demO", hash), false);
  assert.equal(await verifyPassword("conveyor-demo", "garbage"), false);
  assert.notEqual(await hashPassword("conveyor-demo"), hash, "salted");
});

test("a hash made with older parameters still verifies, and asks to be replaced", async () => {
  // Made by the previous release (scrypt N=16384, r=8, p=1) for "conveyor-demo".
  const { scryptSync, randomBytes } = await import("node:crypto");
  const salt = randomBytes(16);
  const old = [
    "scrypt",
    16384,
    8,
    1,
    salt.toString("base64"),
    scryptSync("conveyor-demo", salt, 32, { N: 16384, r: 8, p: 1 }).toString("base64"),
  ].join("$");
  assert.equal(await verifyPassword("conveyor-demo", old), true);
  assert.equal(needsRehash(old), true);
});

test("ids from URLs are checked before they reach Postgres", () => {
  assert.equal(isUuid("0193a1b2-0000-7000-8000-000000000000"), true);
  assert.equal(isUuid("1 OR 1=1"), false);
});
