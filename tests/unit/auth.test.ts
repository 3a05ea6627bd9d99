import { test } from "node:test";
import assert from "node:assert/strict";
import { hashPassword, verifyPassword } from "@/lib/auth/password";
import { isUuid } from "@/lib/ids";

test("passwords verify against their scrypt hash only", async () => {
  const hash = await hashPassword("conveyor-demo");
  assert.match(hash, /^scrypt\$16384\$8\$1\$/);
  assert.equal(await verifyPassword("conveyor-demo", hash), true);
  assert.equal(await verifyPassword("conveyor-demO", hash), false);
  assert.equal(await verifyPassword("conveyor-demo", "garbage"), false);
  assert.notEqual(await hashPassword("conveyor-demo"), hash, "salted");
});

test("ids from URLs are checked before they reach Postgres", () => {
  assert.equal(isUuid("0193a1b2-0000-7000-8000-000000000000"), true);
  assert.equal(isUuid("1 OR 1=1"), false);
});
