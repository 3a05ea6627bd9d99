import { afterEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import pg from "pg";
import { setTimeout as sleep } from "node:timers/promises";
import { GET as listJobsRoute } from "@/app/api/v1/jobs/route";
import { POST as createExportRoute } from "@/app/api/v1/exports/route";
import { GET as eventsRoute } from "@/app/api/v1/events/route";
import { GET as tokensList, POST as createTokenRoute } from "@/app/api/v1/tokens/route";
import { GET as downloadLinkRoute } from "@/app/d/[token]/route";
import { POST as acceptInviteRoute } from "@/app/api/v1/invites/accept/route";
import { GET as scalarRoute } from "@/app/docs/api/scalar.js/route";
import { forgetRefusals } from "@/lib/auth/rate-limit";
import { createApiTokenForEmail, revokeApiToken } from "@/lib/auth/tokens";
import { db, pool } from "@/lib/db";
import { databaseUrl, resetEnvCache } from "@/lib/env";
import { useTestDatabase } from "../helpers/db";
import { drainJobs } from "../helpers/fixtures";
import { waitFor } from "../helpers/net";

const fx = useTestDatabase({ seed: 0.001 });
const ctx = { params: Promise.resolve({}) };

function withEnv(vars: Record<string, string>) {
  Object.assign(process.env, vars);
  resetEnvCache();
}
const restored = [
  "RATE_LIMIT_READS_PER_MINUTE",
  "RATE_LIMIT_WRITES_PER_MINUTE",
  "RATE_LIMIT_ANON_PER_MINUTE",
  "SSE_MAX_STREAMS",
  "SSE_RECHECK_MS",
  "SSE_MAX_LIFETIME_MS",
  "MAX_BODY_BYTES",
];
afterEach(async () => {
  for (const v of restored) delete process.env[v];
  resetEnvCache();
  await pool().query("DELETE FROM rate_limits");
  forgetRefusals();
});

const bearer = (token: string, init: RequestInit = {}): RequestInit => ({
  ...init,
  headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json", ...init.headers },
});
const post = (token: string, body: unknown, headers: Record<string, string> = {}) =>
  createExportRoute(
    new Request("http://test/api/v1/exports", bearer(token, { method: "POST", body: JSON.stringify(body), headers })),
    ctx,
  );
const errorOf = async (res: Response) =>
  (
    (await res.json()) as {
      error: { code: string; message: string; fields?: { path: string }[]; details?: Record<string, unknown> };
    }
  ).error;

describe("bounded input", () => {
  test("a body over MAX_BODY_BYTES answers 413 before it is parsed, with or without a declared length", async () => {
    withEnv({ MAX_BODY_BYTES: "2048" });
    const token = await createApiTokenForEmail("ada@acme.test", "limits");
    const big = JSON.stringify({ dataset: "orders", pad: "x".repeat(5000) });
    const declared = await post(token, JSON.parse(big));
    assert.equal(declared.status, 413);
    const e = await errorOf(declared);
    assert.equal(e.code, "payload_too_large");
    assert.equal(e.fields?.[0]?.path, "(body)");
    // Chunked: no Content-Length; the reader stops at the limit.
    const chunks = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < 10; i++) c.enqueue(new TextEncoder().encode("x".repeat(1000)));
        c.close();
      },
    });
    const streamed = await createExportRoute(
      new Request("http://test/api/v1/exports", {
        method: "POST",
        body: chunks,
        headers: { Authorization: `Bearer ${token}` },
        duplex: "half",
      } as RequestInit),
      ctx,
    );
    assert.equal(streamed.status, 413);
    assert.equal(await db().job.count({ where: { createdById: fx.p.ada.userId } }), 0, "nothing was created");
  });
});

describe("API rate limits", () => {
  test("requests without a principal are limited per client address: bad tokens, invitations, download links, the API reference's script", async () => {
    withEnv({ RATE_LIMIT_ANON_PER_MINUTE: "3" });
    const from = (address: string, init: RequestInit = {}) => ({
      ...init,
      headers: { "x-conveyor-client-address": address, ...init.headers },
    });
    const statuses = async (send: (address: string) => Promise<Response>, address: string, n = 4) => {
      const out: number[] = [];
      for (let i = 0; i < n; i++) out.push((await send(address)).status);
      return out;
    };
    const badToken = (address: string) =>
      listJobsRoute(new Request("http://test/api/v1/jobs", from(address, bearer("cvy_not-a-token"))), ctx);
    assert.deepEqual(await statuses(badToken, "203.0.113.1"), [401, 401, 401, 429]);
    const refused = await badToken("203.0.113.1");
    assert.equal((await errorOf(refused)).code, "rate_limited");
    assert.ok(Number(refused.headers.get("retry-after")) >= 1);
    // Another address keeps its own budget; a valid token spends none of it.
    const ada = await createApiTokenForEmail("ada@acme.test", "anonymous");
    for (let i = 0; i < 4; i++) {
      const ok = await listJobsRoute(new Request("http://test/api/v1/jobs", from("203.0.113.2", bearer(ada))), ctx);
      assert.equal(ok.status, 200);
    }
    assert.deepEqual(await statuses(badToken, "203.0.113.2"), [401, 401, 401, 429]);

    const link = (address: string) =>
      downloadLinkRoute(new Request("http://test/d/dl_unknown", from(address)), {
        params: Promise.resolve({ token: "dl_unknown" }),
      });
    assert.deepEqual(await statuses(link, "203.0.113.3"), [404, 404, 404, 429]);
    const accept = (address: string) =>
      acceptInviteRoute(
        new Request(
          "http://test/api/v1/invites/accept",
          from(address, {
            method: "POST",
            headers: { "Content-Type": "application/json" },
            body: JSON.stringify({ token: "inv_unknown", name: "Someone", password: "whatever it is" }),
          }),
        ),
        ctx,
      );
    assert.deepEqual(await statuses(accept, "203.0.113.4"), [404, 404, 404, 429]);
    const script = (address: string) => scalarRoute(new Request("http://test/docs/api/scalar.js", from(address)), ctx);
    assert.deepEqual(await statuses(script, "203.0.113.5"), [200, 200, 200, 429]);
  });

  test("writes past the budget answer 429 with Retry-After and RateLimit headers; reads and other principals are unaffected", async () => {
    withEnv({ RATE_LIMIT_WRITES_PER_MINUTE: "3", RATE_LIMIT_READS_PER_MINUTE: "100" });
    const ada = await createApiTokenForEmail("ada@acme.test", "rl");
    const gus = await createApiTokenForEmail("gus@globex.test", "rl");
    const statuses: number[] = [];
    let last: Response | null = null;
    for (let i = 0; i < 4; i++) {
      last = await post(ada, { dataset: "customers", format: "csv" });
      statuses.push(last.status);
    }
    assert.deepEqual(statuses, [202, 202, 202, 429]);
    assert.equal((await errorOf(last!)).code, "rate_limited");
    const retryAfter = Number(last!.headers.get("retry-after"));
    assert.ok(retryAfter >= 1 && retryAfter <= 20, `Retry-After ${retryAfter}: one write every 20 s`);
    assert.equal(last!.headers.get("ratelimit-policy"), '"writes";q=3;w=60');
    assert.match(last!.headers.get("ratelimit") ?? "", /^"writes";r=0;t=\d+$/);
    // Reads have their own budget, and say how much is left.
    const read = await listJobsRoute(new Request("http://test/api/v1/jobs", bearer(ada)), ctx);
    assert.equal(read.status, 200);
    assert.equal(read.headers.get("ratelimit-policy"), '"reads";q=100;w=60');
    assert.match(read.headers.get("ratelimit") ?? "", /^"reads";r=99;t=\d+$/);
    // Another tenant's member is not slowed by it.
    assert.equal((await post(gus, { dataset: "customers" })).status, 202);
    // The state is in Postgres: any app process sees the same budget.
    const [row] = (await pool().query("SELECT count(*)::int AS n FROM rate_limits WHERE key LIKE 'writes:user:%'"))
      .rows;
    assert.equal(row.n, 2);
    // Refused once, the token is refused again from memory, before any query: even once its rows are gone.
    await pool().query("DELETE FROM rate_limits");
    const again = await post(ada, { dataset: "customers", format: "csv" });
    assert.equal(again.status, 429);
    assert.ok(Number(again.headers.get("retry-after")) <= retryAfter);
  });
});

describe("quotas", () => {
  test("a user at their quota of unfinished jobs gets 429 quota_exceeded naming it; nothing accepted is dropped", async () => {
    await pool().query("UPDATE tenants SET quota_jobs_per_user = 2, quota_jobs_per_tenant = 3 WHERE id = $1", [
      fx.p.acmeId,
    ]);
    await pool().query("DELETE FROM jobs");
    // Hold them: a pause keeps them queued (unfinished).
    await pool().query(
      "INSERT INTO queue_pauses (id, queue, tenant_id, reason) VALUES (gen_random_uuid(), 'interactive', $1, 'quota test')",
      [fx.p.acmeId],
    );
    try {
      const ada = await createApiTokenForEmail("ada@acme.test", "quota");
      const oscar = await createApiTokenForEmail("oscar@acme.test", "quota");
      assert.equal((await post(ada, { dataset: "customers" }, { "Idempotency-Key": "q1" })).status, 202);
      assert.equal((await post(ada, { dataset: "orders" })).status, 202);
      const refused = await post(ada, { dataset: "events" });
      assert.equal(refused.status, 429);
      const e = await errorOf(refused);
      assert.equal(e.code, "quota_exceeded");
      assert.deepEqual(e.details, { quota: "jobs_per_user", limit: 2, used: 2 });
      assert.match(e.message, /jobs_per_user/);
      // The same request again (idempotency key) is the job already accepted, not a new one.
      assert.equal((await post(ada, { dataset: "customers" }, { "Idempotency-Key": "q1" })).status, 202);
      // The tenant's quota: oscar may add one more, then the tenant is full.
      assert.equal((await post(oscar, { dataset: "customers" })).status, 202);
      const full = await errorOf(await post(oscar, { dataset: "orders" }));
      assert.deepEqual(full.details, { quota: "jobs_per_tenant", limit: 3, used: 3 });
      assert.equal(await db().job.count({ where: { tenantId: fx.p.acmeId } }), 3, "nothing accepted was dropped");
      // Other tenants are not touched by Acme's quota.
      const gus = await createApiTokenForEmail("gus@globex.test", "quota");
      assert.equal((await post(gus, { dataset: "customers" })).status, 202);
    } finally {
      await pool().query("DELETE FROM queue_pauses");
      await pool().query("UPDATE tenants SET quota_jobs_per_user = NULL, quota_jobs_per_tenant = NULL");
    }
  });

  test("concurrent creates by one user cannot pass the quota together", async () => {
    await pool().query("UPDATE tenants SET quota_jobs_per_user = 5 WHERE id = $1", [fx.p.globexId]);
    await pool().query(
      "INSERT INTO queue_pauses (id, queue, tenant_id, reason) VALUES (gen_random_uuid(), 'interactive', $1, 'quota race')",
      [fx.p.globexId],
    );
    try {
      const gina = await createApiTokenForEmail("gina@globex.test", "race");
      const statuses = await Promise.all(
        Array.from({ length: 20 }, () => post(gina, { dataset: "customers" }).then((r) => r.status)),
      );
      assert.equal(statuses.filter((s) => s === 202).length, 5, `accepted: ${statuses.join(",")}`);
      assert.equal(statuses.filter((s) => s === 429).length, 15);
    } finally {
      await pool().query("UPDATE tenants SET quota_jobs_per_user = NULL");
      await pool().query("UPDATE queue_pauses SET resumed_at = now() WHERE reason = 'quota race'");
    }
  });

  test("creates batched together from several users and tenants pass each user's and each tenant's quota exactly", async () => {
    await pool().query("DELETE FROM jobs");
    await pool().query("UPDATE tenants SET quota_jobs_per_user = 4, quota_jobs_per_tenant = 6 WHERE id = $1", [
      fx.p.acmeId,
    ]);
    await pool().query("UPDATE tenants SET quota_jobs_per_user = 3 WHERE id = $1", [fx.p.globexId]);
    await pool().query(
      "INSERT INTO queue_pauses (id, queue, reason) VALUES (gen_random_uuid(), 'interactive', 'quota batch')",
    );
    try {
      const tokens = {
        ada: await createApiTokenForEmail("ada@acme.test", "batch"),
        oscar: await createApiTokenForEmail("oscar@acme.test", "batch"),
        gus: await createApiTokenForEmail("gus@globex.test", "batch"),
      };
      const who = Array.from({ length: 30 }, (_, i) => (["ada", "oscar", "gus"] as const)[i % 3]!);
      const statuses = await Promise.all(
        who.map((w) => post(tokens[w], { dataset: "customers" }).then((r) => r.status)),
      );
      const accepted = (w: string) => statuses.filter((s, i) => s === 202 && who[i] === w).length;
      assert.ok(
        statuses.every((s) => s === 202 || s === 429),
        statuses.join(","),
      );
      assert.equal(accepted("ada") + accepted("oscar"), 6, `Acme's quota of 6: ${statuses.join(",")}`);
      assert.ok(accepted("ada") <= 4 && accepted("oscar") <= 4, "each Acme user's quota of 4");
      assert.equal(accepted("gus"), 3, "Gus's quota of 3");
      const { rows } = await pool().query<{ slug: string; n: number }>(
        `SELECT t.slug, count(*)::int AS n FROM jobs j JOIN tenants t ON t.id = j.tenant_id GROUP BY 1 ORDER BY 1`,
      );
      assert.deepEqual(rows, [
        { slug: "acme", n: 6 },
        { slug: "globex", n: 3 },
      ]);
    } finally {
      await pool().query("UPDATE tenants SET quota_jobs_per_user = NULL, quota_jobs_per_tenant = NULL");
      await pool().query("UPDATE queue_pauses SET resumed_at = now() WHERE reason = 'quota batch'");
    }
  });

  test("a tenant keeping its quota of export bytes cannot request more exports until it deletes some", async () => {
    await pool().query("DELETE FROM jobs");
    const ada = await createApiTokenForEmail("ada@acme.test", "bytes");
    assert.equal((await post(ada, { dataset: "customers" })).status, 202);
    await drainJobs();
    const [kept] = (
      await pool().query("SELECT sum(size)::bigint AS n FROM export_files WHERE tenant_id = $1", [fx.p.acmeId])
    ).rows;
    await pool().query("UPDATE tenants SET quota_export_bytes = $2 WHERE id = $1", [fx.p.acmeId, Number(kept.n)]);
    // The running total the quota reads (tenant_storage, kept by triggers) is the sum of the files.
    const totals = async () =>
      (
        await pool().query<{ kept: string; live: string }>(
          `SELECT (SELECT export_bytes FROM tenant_storage WHERE tenant_id = $1)::text AS kept,
                  (SELECT coalesce(sum(size), 0) FROM export_files WHERE tenant_id = $1 AND deleted_at IS NULL)::text AS live`,
          [fx.p.acmeId],
        )
      ).rows[0]!;
    try {
      assert.equal((await totals()).kept, String(kept.n));
      const e = await errorOf(await post(ada, { dataset: "orders" }));
      assert.equal(e.code, "quota_exceeded");
      assert.equal((e.details as { quota: string }).quota, "export_bytes");
      assert.equal((e.details as { used: number }).used, Number(kept.n));
      // A file past its expiry stops counting at once, before the sweeper marks it deleted.
      await pool().query("UPDATE export_files SET expires_at = now() - interval '1 second' WHERE tenant_id = $1", [
        fx.p.acmeId,
      ]);
      assert.equal((await totals()).kept, String(kept.n), "an expired file is still live until swept");
      assert.equal((await post(ada, { dataset: "orders" })).status, 202);
      // Deleting files (as the sweeper does) takes their bytes off the total.
      await pool().query("UPDATE export_files SET deleted_at = now() WHERE tenant_id = $1", [fx.p.acmeId]);
      const after = await totals();
      assert.equal(after.kept, after.live);
      assert.equal(after.kept, "0");
    } finally {
      await pool().query("UPDATE tenants SET quota_export_bytes = NULL");
    }
  });

  test("the quota counts follow the jobs: creates, skipped conflicts, cancels, completions, deletions, a lost creator", async () => {
    const OPEN = `parent_id IS NULL AND status IN ('scheduled', 'queued', 'running', 'retrying')`;
    // Every (tenant, creator) and tenant total whose kept count differs from the jobs'.
    const mismatches = async () =>
      (
        await pool().query(
          `WITH actual AS (
             SELECT tenant_id, '00000000-0000-0000-0000-000000000000'::uuid AS user_id, count(*) AS n
               FROM jobs WHERE ${OPEN} GROUP BY 1
             UNION ALL
             SELECT tenant_id, created_by_id, count(*) FROM jobs WHERE ${OPEN} AND created_by_id IS NOT NULL GROUP BY 1, 2
           ), kept AS (
             SELECT tenant_id, user_id, sum(open) AS n FROM open_job_counts GROUP BY 1, 2 HAVING sum(open) <> 0
           )
           SELECT tenant_id, user_id, actual.n AS actual, kept.n AS kept
             FROM actual FULL JOIN kept USING (tenant_id, user_id)
            WHERE actual.n IS DISTINCT FROM kept.n`,
        )
      ).rows;
    await pool().query("DELETE FROM jobs");
    assert.deepEqual(await mismatches(), [], "deleting open jobs takes them off");
    await pool().query(
      "INSERT INTO queue_pauses (id, queue, tenant_id, reason) VALUES (gen_random_uuid(), 'interactive', $1, 'counts')",
      [fx.p.acmeId],
    );
    try {
      const ada = await createApiTokenForEmail("ada@acme.test", "counts");
      const oscar = await createApiTokenForEmail("oscar@acme.test", "counts");
      // Concurrent creates (one statement for several) and single ones.
      const made = await Promise.all([
        ...Array.from({ length: 6 }, () => post(ada, { dataset: "customers" })),
        post(oscar, { dataset: "orders", runAt: new Date(Date.now() + 3_600_000).toISOString() }),
      ]);
      assert.deepEqual(
        made.map((r) => r.status),
        Array<number>(7).fill(202),
      );
      // The 202 says which pause holds the job (read by its own INSERT).
      const body = (await made[0]!.json()) as {
        admission: string;
        pause: { reason: string; since: string; via: string } | null;
      };
      assert.equal(body.admission, "paused");
      assert.equal(body.pause?.reason, "counts");
      assert.match(body.pause?.since ?? "", /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      assert.equal((await post(ada, { dataset: "events" })).status, 202);
      assert.deepEqual(await mismatches(), []);
      const { rows: byAda } = await pool().query<{ n: string }>(
        "SELECT sum(open)::text AS n FROM open_job_counts WHERE user_id = (SELECT id FROM users WHERE email = 'ada@acme.test')",
      );
      assert.equal(byAda[0]!.n, "7");
      // A row an ON CONFLICT DO NOTHING skips is not counted (the schedules' runs insert so).
      const one = (
        await pool().query<{ id: string; key: string }>(
          "UPDATE jobs SET idempotency_key = 'counts-1' WHERE id = (SELECT id FROM jobs LIMIT 1) RETURNING id",
        )
      ).rows[0]!;
      const dup = await pool().query(
        `INSERT INTO jobs (id, tenant_id, type, queue, status, input, input_hash, max_attempts, created_by_id,
                           idempotency_key, run_at, updated_at)
         SELECT gen_random_uuid(), tenant_id, type, queue, 'queued', input, input_hash, 3, created_by_id,
                idempotency_key, now(), now() FROM jobs WHERE id = $1
         ON CONFLICT DO NOTHING`,
        [one.id],
      );
      assert.equal(dup.rowCount, 0);
      assert.deepEqual(await mismatches(), []);
      // Cancelled, and a creator lost (a deleted user's jobs keep no creator): counts move.
      await pool().query("UPDATE jobs SET status = 'cancelled', finished_at = now() WHERE id = $1", [one.id]);
      await pool().query(
        "UPDATE jobs SET created_by_id = NULL WHERE id = (SELECT id FROM jobs WHERE status = 'queued' LIMIT 1)",
      );
      assert.deepEqual(await mismatches(), []);
      // Counts written by a connection that has ended are folded into one row per tenant and user.
      const c = new pg.Client({ connectionString: databaseUrl() });
      await c.connect();
      const pid = (await c.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
      await c.query(
        "UPDATE jobs SET status = 'cancelled', finished_at = now() WHERE id = (SELECT id FROM jobs WHERE status = 'queued' AND created_by_id IS NOT NULL LIMIT 1)",
      );
      await c.end();
      await waitFor(
        "the connection to end",
        async () => (await pool().query("SELECT 1 FROM pg_stat_activity WHERE pid = $1", [pid])).rowCount === 0,
        5_000,
      );
      const { rows: folded } = await pool().query<{ n: number }>("SELECT conveyor_open_job_counts_compact() AS n");
      assert.ok(folded[0]!.n >= 1, "the ended connection's rows were folded");
      assert.equal((await pool().query("SELECT 1 FROM open_job_counts WHERE shard = $1", [pid])).rowCount, 0);
      assert.deepEqual(await mismatches(), []);
      // The rest run to the end: nothing is left counted.
      await pool().query("UPDATE queue_pauses SET resumed_at = now() WHERE reason = 'counts'");
      await pool().query("UPDATE jobs SET run_at = now(), status = 'queued' WHERE status = 'scheduled'");
      await drainJobs();
      assert.equal((await pool().query(`SELECT 1 FROM jobs WHERE ${OPEN}`)).rowCount, 0);
      assert.deepEqual(await mismatches(), [], "every tenant's and user's count back at zero");
    } finally {
      await pool().query("UPDATE queue_pauses SET resumed_at = now() WHERE reason = 'counts' AND resumed_at IS NULL");
    }
  });
});

describe("API tokens: scopes, expiry, and who may make them", () => {
  test("a read-only token reads and is refused writes; an expired token is unknown; a token cannot make tokens", async () => {
    const readOnly = await createApiTokenForEmail("ada@acme.test", "ro", undefined, { scopes: ["read"] });
    assert.equal((await listJobsRoute(new Request("http://test/api/v1/jobs", bearer(readOnly)), ctx)).status, 200);
    const refused = await post(readOnly, { dataset: "customers" });
    assert.equal(refused.status, 403);
    assert.match((await errorOf(refused)).message, /limited to read/);

    const full = await createApiTokenForEmail("ada@acme.test", "full", undefined, { expiresInDays: 1 });
    const minted = await createTokenRoute(
      new Request("http://test/api/v1/tokens", bearer(full, { method: "POST", body: JSON.stringify({ name: "x" }) })),
      ctx,
    );
    assert.equal(minted.status, 403, "only a browser session creates tokens");
    await pool().query("UPDATE api_tokens SET expires_at = now() - interval '1 second' WHERE name = 'full'");
    const expired = await tokensList(new Request("http://test/api/v1/tokens", bearer(full)), ctx);
    assert.equal(expired.status, 401);
  });
});

describe("SSE streams", () => {
  test("at most SSE_MAX_STREAMS per principal (429 beyond); a revoked token ends its streams; streams end at their lifetime", async () => {
    withEnv({ SSE_MAX_STREAMS: "2", SSE_RECHECK_MS: "500", SSE_MAX_LIFETIME_MS: "60000" });
    const token = await createApiTokenForEmail("ada@acme.test", "sse");
    const open = (signal: AbortSignal) =>
      eventsRoute(new Request("http://test/api/v1/events", { ...bearer(token), signal }), ctx);
    const aborts = [new AbortController(), new AbortController(), new AbortController()];
    const first = await open(aborts[0]!.signal);
    const second = await open(aborts[1]!.signal);
    assert.deepEqual([first.status, second.status], [200, 200]);
    const third = await open(aborts[2]!.signal);
    assert.equal(third.status, 429);
    assert.equal(third.headers.get("retry-after"), "30");
    // Closing one frees its slot.
    aborts[0]!.abort();
    await first.body?.cancel().catch(() => {});
    await sleep(100);
    const again = await open(new AbortController().signal);
    assert.equal(again.status, 200);
    // Revoking the token ends its open streams within a re-check.
    const [tokenRow] = (await pool().query("SELECT id FROM api_tokens WHERE name = 'sse'")).rows;
    await revokeApiToken(fx.p.ada, tokenRow.id);
    const reader = again.body!.getReader();
    const ended = (async () => {
      for (;;) if ((await reader.read()).done) return true;
    })();
    assert.equal(await Promise.race([ended, sleep(5_000).then(() => false)]), true, "the stream ended");
    aborts.forEach((a) => a.abort());
    await second.body?.cancel().catch(() => {});
  });

  test("a stream ends after SSE_MAX_LIFETIME_MS (the client reconnects with Last-Event-ID)", async () => {
    withEnv({ SSE_MAX_LIFETIME_MS: "5000", SSE_RECHECK_MS: "500" });
    const token = await createApiTokenForEmail("ada@acme.test", "sse-life");
    const started = Date.now();
    const res = await eventsRoute(new Request("http://test/api/v1/events", bearer(token)), ctx);
    const reader = res.body!.getReader();
    while (!(await reader.read()).done) {
      /* keep-alives */
    }
    const lived = Date.now() - started;
    assert.ok(lived >= 4_500 && lived < 15_000, `ended after ${lived} ms`);
    const [left] = (await pool().query("SELECT count(*)::int AS n FROM sse_streams")).rows;
    await sleep(100);
    assert.ok(left.n <= 1);
  });
});
