import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { GET as eventsRoute } from "@/app/api/v1/events/route";
import { changePassword } from "@/lib/auth/accounts";
import { loadSessionPrincipal, loadUserPrincipal } from "@/lib/auth/principal";
import { createApiTokenForEmail, revokeApiToken } from "@/lib/auth/tokens";
import { pool } from "@/lib/db";
import { resetEnvCache } from "@/lib/env";
import { sseRecheckStats, watchedStreams } from "@/lib/sse/recheck";
import { directOutputs, openTenantEventStream } from "@/lib/sse/streams";
import { useTestDatabase } from "../helpers/db";

const fx = useTestDatabase({ seed: 0.001 });
const ctx = { params: Promise.resolve({}) };

after(() => {
  delete process.env.SSE_MAX_STREAMS;
  delete process.env.SSE_MAX_STREAMS_PER_TENANT;
  delete process.env.SSE_RECHECK_MS;
  resetEnvCache();
});

/** Polls `check` until it holds (or `ms` pass); returns whether it held. */
async function until(check: () => boolean | Promise<boolean>, ms = 10_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return true;
    await sleep(50);
  }
  return check();
}

describe("SSE re-check", () => {
  test("open streams are re-checked once per principal, their slots touched in one statement, and a revoked token's streams all end", async () => {
    // 200 streams of one user (four tokens of Ada's: the caps count them together).
    Object.assign(process.env, { SSE_MAX_STREAMS: "200", SSE_MAX_STREAMS_PER_TENANT: "200", SSE_RECHECK_MS: "500" });
    resetEnvCache();
    const principals = 4;
    const perPrincipal = 50;
    const tokens: string[] = [];
    for (let i = 0; i < principals; i++) tokens.push(await createApiTokenForEmail("ada@acme.test", `recheck-${i}`));
    const streams: { token: number; abort: AbortController; body: ReadableStream<Uint8Array> }[] = [];
    for (let t = 0; t < principals; t++) {
      for (let i = 0; i < perPrincipal; i++) {
        const abort = new AbortController();
        const res = await eventsRoute(
          new Request("http://test/api/v1/events", {
            headers: { Authorization: `Bearer ${tokens[t]}` },
            signal: abort.signal,
          }),
          ctx,
        );
        assert.equal(res.status, 200);
        streams.push({ token: t, abort, body: res.body! });
      }
    }
    const total = principals * perPrincipal;
    assert.deepEqual(watchedStreams(), { streams: total, principals });

    // A few re-checks: each reloads the 4 principals, not the 200 streams, and touches every slot.
    const [{ t0 }] = (await pool().query("SELECT now() AS t0")).rows;
    const before = { ...sseRecheckStats };
    assert.ok(await until(() => sseRecheckStats.ticks - before.ticks >= 3), "re-checks ran");
    const ticks = sseRecheckStats.ticks - before.ticks;
    const reloads = sseRecheckStats.reloads - before.reloads;
    const statements = sseRecheckStats.touchStatements - before.touchStatements;
    // (+1: a re-check under way when `before` was read.)
    assert.ok(
      reloads <= principals * (ticks + 1),
      `${reloads} principal reloads in ${ticks} re-checks of ${total} streams`,
    );
    assert.ok(statements <= ticks + 1, `${statements} touch statements in ${ticks} re-checks`);
    assert.ok(
      await until(
        async () =>
          (await pool().query("SELECT count(*)::int AS n FROM sse_streams WHERE seen_at > $1", [t0])).rows[0].n ===
          total,
      ),
      "every open stream's slot was touched",
    );

    // Revoking one token ends its 50 streams within a re-check; the others stay open.
    const [row] = (await pool().query("SELECT id FROM api_tokens WHERE name = 'recheck-0'")).rows;
    await revokeApiToken(fx.p.ada, row.id);
    const ended = await Promise.all(
      streams
        .filter((s) => s.token === 0)
        .map(async (s) => {
          const reader = s.body.getReader();
          const done = (async () => {
            for (;;) if ((await reader.read()).done) return true;
          })();
          return Promise.race([done, sleep(10_000).then(() => false)]);
        }),
    );
    assert.equal(ended.filter(Boolean).length, perPrincipal, "every stream of the revoked token ended");
    assert.deepEqual(watchedStreams(), { streams: total - perPrincipal, principals: principals - 1 });
    assert.ok(
      await until(
        async () =>
          (await pool().query("SELECT count(*)::int AS n FROM sse_streams")).rows[0].n === total - perPrincipal,
      ),
      "their slots were released",
    );

    // Closing the rest takes them off the re-check and frees their slots.
    for (const s of streams.filter((x) => x.token !== 0)) {
      s.abort.abort();
      await s.body.cancel().catch(() => {});
    }
    assert.deepEqual(watchedStreams(), { streams: 0, principals: 0 });
    assert.ok(
      await until(async () => (await pool().query("SELECT count(*)::int AS n FROM sse_streams")).rows[0].n === 0),
      "every slot released",
    );
  });

  test("a password change ends the event streams of the user's earlier sessions; a token's stream stays", async () => {
    Object.assign(process.env, { SSE_RECHECK_MS: "500" });
    resetEnvCache();
    const session = (await loadSessionPrincipal(fx.p.gus.userId, Date.now() - 60_000))!;
    await createApiTokenForEmail("gus@globex.test", "recheck-password");
    const [row] = (await pool().query("SELECT id FROM api_tokens WHERE name = 'recheck-password'")).rows;
    const viaToken = (await loadUserPrincipal(fx.p.gus.userId, row.id, fx.p.globexId, ["read", "write"]))!;
    assert.equal(viaToken.tenantId, fx.p.globexId);
    const open = async (p: typeof session) => {
      const abort = new AbortController();
      const body = await openTenantEventStream(p, abort.signal);
      const reader = body.getReader();
      let ended = false;
      void (async () => {
        for (;;) if ((await reader.read()).done) return void (ended = true);
      })().catch(() => (ended = true));
      return { abort, ended: () => ended };
    };
    const sessionStream = await open(session);
    const tokenStream = await open(viaToken);
    try {
      // A re-check before the change leaves both open.
      const ticks = sseRecheckStats.ticks;
      assert.ok(await until(() => sseRecheckStats.ticks >= ticks + 2), "re-checks ran");
      assert.equal(sessionStream.ended(), false);

      await changePassword(fx.p.gus, { currentPassword: "conveyor-demo", newPassword: "gus new password" });
      assert.ok(await until(() => sessionStream.ended(), 5_000), "the earlier session's stream ended");
      const after = sseRecheckStats.ticks;
      assert.ok(await until(() => sseRecheckStats.ticks >= after + 2), "re-checks ran");
      assert.equal(tokenStream.ended(), false, "the token's stream stays open");
    } finally {
      tokenStream.abort.abort();
      sessionStream.abort.abort();
    }
    assert.ok(await until(() => watchedStreams().streams === 0), "off the re-check");
  });

  test("a stream whose client is gone before the abort arrives (its output throws) still ends: slot released, off the re-check", async () => {
    let gone = false;
    let refused = 0;
    const outputs = {
      open: () => ({
        enqueue() {
          if (gone) {
            refused++;
            throw new Error("stream closed");
          }
        },
        lagging: () => false,
        close() {},
        onDrain() {},
      }),
    };
    const abort = new AbortController(); // never aborted: the output's failure alone must end the stream
    await directOutputs.run(outputs, () => openTenantEventStream(fx.p.ada, abort.signal));
    await sleep(300); // subscribed
    assert.deepEqual(watchedStreams(), { streams: 1, principals: 1 });
    gone = true;
    // The next event's write finds the socket gone.
    const event = {
      tenantId: fx.p.acmeId,
      jobId: "00000000-0000-7000-8000-000000000001",
      seq: 1,
      type: "export",
      status: "running",
      attempts: 1,
      done: 1,
      total: null,
      unit: "rows",
      stage: null,
      message: null,
      at: new Date().toISOString(),
    };
    await pool().query("SELECT pg_notify('conveyor_job_events', $1)", [JSON.stringify(event)]);
    assert.ok(await until(() => refused > 0), "the event was written");
    assert.ok(await until(() => watchedStreams().streams === 0), "off the re-check");
    assert.ok(
      await until(async () => (await pool().query("SELECT count(*)::int AS n FROM sse_streams")).rows[0].n === 0),
      "its slot was released",
    );
  });
});
