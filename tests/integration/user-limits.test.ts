/**
 * Limits per user, not per token (issue 32, item 5): a user's tokens and session share one rate
 * budget and one count of open streams, a tenant's users share a count of streams, a user has a
 * bounded number of tokens, and a tus request waiting for an upload's lock is woken, not polling.
 */
import { afterEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import pg from "pg";
import { setTimeout as sleep } from "node:timers/promises";
import { GET as eventsRoute } from "@/app/api/v1/events/route";
import { POST as createExportRoute } from "@/app/api/v1/exports/route";
import { forgetRefusals } from "@/lib/auth/rate-limit";
import { createApiToken, createApiTokenForEmail } from "@/lib/auth/tokens";
import { pool } from "@/lib/db";
import { databaseUrl, resetEnvCache } from "@/lib/env";
import { PostgresLocker } from "@/lib/uploads/locker";
import { useTestDatabase } from "../helpers/db";

const fx = useTestDatabase({ seed: 0.001 });
const ctx = { params: Promise.resolve({}) };

const settings = [
  "RATE_LIMIT_READS_PER_MINUTE",
  "RATE_LIMIT_WRITES_PER_MINUTE",
  "SSE_MAX_STREAMS",
  "SSE_MAX_STREAMS_PER_TENANT",
  "QUOTA_TOKENS_PER_USER",
];
function withEnv(vars: Record<string, string>): void {
  Object.assign(process.env, vars);
  resetEnvCache();
}
afterEach(async () => {
  for (const v of settings) delete process.env[v];
  resetEnvCache();
  await pool().query("DELETE FROM rate_limits");
  await pool().query("UPDATE api_tokens SET revoked_at = now() WHERE revoked_at IS NULL");
  forgetRefusals();
});

const bearer = (token: string, init: RequestInit = {}): RequestInit => ({
  ...init,
  headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json", ...init.headers },
});
const post = (token: string) =>
  createExportRoute(
    new Request(
      "http://test/api/v1/exports",
      bearer(token, { method: "POST", body: JSON.stringify({ dataset: "customers", format: "csv" }) }),
    ),
    ctx,
  );
const errorOf = async (res: Response) =>
  ((await res.json()) as { error: { code: string; details?: Record<string, unknown> } }).error;

describe("rate limits are the user's", () => {
  test("a user's tokens draw from one budget: a new token buys no more requests; another user's is untouched", async () => {
    withEnv({ RATE_LIMIT_WRITES_PER_MINUTE: "3" });
    const first = await createApiTokenForEmail("ada@acme.test", "rl 1");
    const second = await createApiTokenForEmail("ada@acme.test", "rl 2");
    const statuses: number[] = [];
    for (const token of [first, first, second, second, first]) statuses.push((await post(token)).status);
    assert.deepEqual(statuses, [202, 202, 202, 429, 429]);
    const third = await createApiTokenForEmail("ada@acme.test", "rl 3");
    const refused = await post(third);
    assert.equal(refused.status, 429, "a token made after the refusal is refused too");
    assert.equal((await errorOf(refused)).code, "rate_limited");
    const oscar = await createApiTokenForEmail("oscar@acme.test", "rl");
    assert.equal((await post(oscar)).status, 202, "another member of the tenant has a budget of their own");
    const { rows } = await pool().query<{ key: string }>("SELECT key FROM rate_limits ORDER BY key");
    assert.deepEqual(
      rows.map((r) => r.key),
      [`writes:user:${fx.p.ada.userId}`, `writes:user:${fx.p.oscar.userId}`].sort(),
    );
  });
});

describe("API tokens per user", () => {
  test("at most QUOTA_TOKENS_PER_USER live tokens, also when made at once; revoked and expired ones do not count", async () => {
    withEnv({ QUOTA_TOKENS_PER_USER: "3" });
    const made = await Promise.allSettled(
      Array.from({ length: 6 }, (_, i) => createApiToken(fx.p.ada, { name: `cap ${i}` })),
    );
    assert.equal(made.filter((r) => r.status === "fulfilled").length, 3);
    const refusal = made.find((r) => r.status === "rejected") as PromiseRejectedResult;
    assert.equal(refusal.reason.code, "quota_exceeded");
    assert.deepEqual(refusal.reason.extras.details, { quota: "tokens_per_user", limit: 3, used: 3 });
    // The CLI's way is held to it too.
    await assert.rejects(createApiTokenForEmail("ada@acme.test", "cli"), { code: "quota_exceeded" });
    // Another user is not.
    await createApiToken(fx.p.oscar, { name: "mine" });
    // A revoked or expired token frees its place.
    await pool().query("UPDATE api_tokens SET revoked_at = now() WHERE name = 'cap 0' OR name = 'cap 1'");
    await pool().query(
      "UPDATE api_tokens SET expires_at = now() - interval '1 second' WHERE user_id = $1 AND revoked_at IS NULL",
      [fx.p.ada.userId],
    );
    for (let i = 0; i < 3; i++) await createApiToken(fx.p.ada, { name: `again ${i}` });
  });
});

describe("event streams per user and per tenant", () => {
  const open = (token: string, signal: AbortSignal) =>
    eventsRoute(new Request("http://test/api/v1/events", { ...bearer(token), signal }), ctx);

  test("SSE_MAX_STREAMS counts a user's streams over all their tokens; SSE_MAX_STREAMS_PER_TENANT a tenant's over its users", async () => {
    withEnv({ SSE_MAX_STREAMS: "2", SSE_MAX_STREAMS_PER_TENANT: "3" });
    const ada1 = await createApiTokenForEmail("ada@acme.test", "sse 1");
    const ada2 = await createApiTokenForEmail("ada@acme.test", "sse 2");
    const oscar = await createApiTokenForEmail("oscar@acme.test", "sse");
    const gus = await createApiTokenForEmail("gus@globex.test", "sse");
    const abort = new AbortController();
    const opened: Response[] = [];
    try {
      for (const t of [ada1, ada2]) opened.push(await open(t, abort.signal));
      assert.deepEqual(
        opened.map((r) => r.status),
        [200, 200],
      );
      const third = await open(ada2, abort.signal);
      assert.equal(third.status, 429, "a second token of the same user shares the user's two streams");
      assert.deepEqual((await errorOf(third)).details, { limit: 2, scope: "user" });
      opened.push(await open(oscar, abort.signal));
      assert.equal(opened.at(-1)!.status, 200);
      const fourth = await open(oscar, abort.signal);
      assert.equal(fourth.status, 429, "the tenant's three streams are taken");
      assert.deepEqual((await errorOf(fourth)).details, { limit: 3, scope: "tenant" });
      // Another tenant's are its own.
      opened.push(await open(gus, abort.signal));
      assert.equal(opened.at(-1)!.status, 200);
    } finally {
      abort.abort();
      for (const r of opened) await r.body?.cancel().catch(() => {});
    }
  });
});

describe("tus: waiting for an upload's lock", () => {
  test("a waiter tries again when the holder's unlock notifies, not every 50 ms", async () => {
    const never = new AbortController().signal;
    const notified: string[] = [];
    const listener = new pg.Client({ connectionString: databaseUrl() });
    // Every try to take a lock is this process's INSERT INTO upload_locks, through the pool.
    const p = pool();
    const query = p.query.bind(p) as (...args: unknown[]) => unknown;
    let attempts = 0;
    (p as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      if (/INSERT INTO upload_locks/.test(String(args[0]))) attempts++;
      return query(...args);
    };
    await listener.connect();
    try {
      listener.on("notification", (m) => notified.push(m.payload ?? ""));
      await listener.query("LISTEN conveyor_upload_locks");
      // Two processes' lockers; the holder renews rarely, so nothing but the unlock can free the waiter soon.
      const holder = new PostgresLocker({ renewMs: 60_000 }).newLock("upload-wait");
      await holder.lock(never, () => {});
      const waiter = new PostgresLocker({ renewMs: 60_000 }).newLock("upload-wait");
      attempts = 0;
      const acquired = waiter.lock(never, () => {});
      while (attempts === 0) await sleep(10);
      // A while of waiting: a 50 ms poll would have tried about ten times more.
      await sleep(500);
      assert.equal(attempts, 1, "one try, then a wait");
      await holder.unlock();
      await acquired;
      assert.equal(attempts, 2, "woken once, and took it");
      await waiter.unlock();
      while (notified.length < 2) await sleep(10);
      assert.deepEqual(notified, ["upload-wait", "upload-wait"], "each unlock notifies the upload's id");
    } finally {
      (p as unknown as { query: unknown }).query = query;
      await listener.end();
    }
  });
});
