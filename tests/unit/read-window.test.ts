/**
 * The read-your-writes cookie (lib/http/read-window.ts): which writes set it, and which values a
 * request's cookie may carry to send its reads to the primary. The replica itself is tested on a
 * real primary and standby in tests/integration/replica.test.ts.
 */
import { afterEach, test } from "node:test";
import assert from "node:assert/strict";
import type { Principal } from "@/lib/auth/principal";
import { resetEnvCache } from "@/lib/env";
import { READ_PRIMARY_COOKIE, readPrimaryUntilOf, recordWrite } from "@/lib/http/read-window";
import { forgetWrites } from "@/lib/read-db";

const person = (role: Principal["role"], isPlatformAdmin = false): Principal => ({
  userId: "00000000-0000-4000-8000-000000000001",
  email: "x@test",
  tenantId: null,
  tenantSlug: null,
  role,
  isPlatformAdmin,
  tokenId: null,
  scopes: null,
});

function withReplica(on: boolean): void {
  if (on) {
    process.env.DATABASE_REPLICA_URL = "postgresql://postgres@127.0.0.1:1/unused";
    process.env.DATABASE_REPLICA_MAX_LAG_MS = "5000";
  } else {
    delete process.env.DATABASE_REPLICA_URL;
    delete process.env.DATABASE_REPLICA_MAX_LAG_MS;
  }
  resetEnvCache();
}
afterEach(() => {
  withReplica(false);
  forgetWrites();
});

const request = (method: string, cookie?: string, url = "http://test/api/v1/ops/jobs/actions") =>
  new Request(url, { method, headers: cookie ? { Cookie: cookie } : {} });

test("an operator's or platform admin's write sets the cookie; a read, a member, or no replica do not", () => {
  withReplica(true);
  const cookie = recordWrite(request("POST"), person("operator"));
  assert.match(cookie ?? "", new RegExp(`^${READ_PRIMARY_COOKIE}=\\d+; Max-Age=5; Path=/; HttpOnly; SameSite=Lax$`));
  const until = Number(/=(\d+);/.exec(cookie!)![1]);
  assert.ok(until > Date.now() && until <= Date.now() + 5_000);
  assert.match(recordWrite(request("DELETE", undefined, "https://x/api"), person(null, true)) ?? "", /; Secure$/);
  assert.equal(recordWrite(request("GET"), person("operator")), null);
  assert.equal(recordWrite(request("POST"), person("member")), null);
  withReplica(false);
  assert.equal(recordWrite(request("POST"), person("operator")), null);
});

test("a request's cookie counts only within the bound ahead, and only with a replica", () => {
  withReplica(true);
  const now = Date.now();
  const at = (until: number) => readPrimaryUntilOf(request("GET", `a=1; ${READ_PRIMARY_COOKIE}=${until}; b=2`), now);
  assert.equal(at(now + 3_000), now + 3_000);
  assert.equal(at(now - 1), undefined, "passed");
  assert.equal(at(now + 60_000), undefined, "further ahead than the bound: not ours");
  assert.equal(readPrimaryUntilOf(request("GET", `${READ_PRIMARY_COOKIE}=soon`), now), undefined);
  assert.equal(readPrimaryUntilOf(request("GET"), now), undefined);
  withReplica(false);
  assert.equal(at(now + 3_000), undefined);
});
