/**
 * The read replica (DATABASE_REPLICA_URL, lib/read-db.ts) on a real primary and streaming replica
 * that this file makes itself from Debian's Postgres 15 (tests/helpers/replica.ts): the primary
 * migrated by the repo's migrate script and seeded, the replica a pg_basebackup -R copy of it.
 * Pausing the replica's replay (pg_wal_replay_pause) makes what it shows differ from the primary
 * on purpose, so each read below proves which database answered it:
 *  - the console's lists, overview and metrics read the replica, and the metrics carry its lag;
 *  - an operator's action opens a window in which their lists read the primary at once (in this
 *    process, and in another through the cookie the action's response set);
 *  - past the lag bound the reads fall back to the primary, and return once it has caught up;
 *  - with the replica stopped the console still answers, from the primary.
 * Skips, saying why, where the Postgres 15 binaries are not installed.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import pg from "pg";
import { GET as opsJobsRoute } from "@/app/api/v1/ops/jobs/route";
import { POST as jobActionsRoute } from "@/app/api/v1/ops/jobs/actions/route";
import { createApiTokenForEmail } from "@/lib/auth/tokens";
import { closeDb, pool } from "@/lib/db";
import { resetEnvCache } from "@/lib/env";
import { READ_PRIMARY_COOKIE } from "@/lib/http/read-window";
import { listOpsJobs } from "@/lib/ops/jobs";
import { renderMetrics } from "@/lib/ops/metrics";
import { getOverview } from "@/lib/ops/stats";
import { forgetWrites, probeReplica, readRoute, replicaStatus } from "@/lib/read-db";
import "@/lib/workloads";
import { migrate } from "../../scripts/database";
import { seedDemo, type DemoPrincipals } from "../helpers/fixtures";
import { waitFor } from "../helpers/net";
import { replicaPairMissing, startReplicaPair, type ReplicaPair } from "../helpers/replica";

const missing = replicaPairMissing();
if (missing) console.log(`[replica.test] skipped: ${missing}`);

/** The bound while replay is paused on purpose: far longer than the steps that read the replica meanwhile. */
const LONG_BOUND_MS = "600000";

function setEnv(vars: Record<string, string | undefined>): void {
  for (const [k, v] of Object.entries(vars)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  resetEnvCache();
}

type Route = (req: Request, ctx: { params: Promise<Record<string, never>> }) => Promise<Response>;
async function call(route: Route, token: string, path: string, opts: { body?: unknown; cookie?: string } = {}) {
  const res = await route(
    new Request(`http://test${path}`, {
      method: opts.body === undefined ? "GET" : "POST",
      headers: {
        Authorization: `Bearer ${token}`,
        "Content-Type": "application/json",
        ...(opts.cookie ? { Cookie: opts.cookie } : {}),
      },
      ...(opts.body === undefined ? {} : { body: JSON.stringify(opts.body) }),
    }),
    { params: Promise.resolve({}) },
  );
  return { res, json: (await res.json()) as Record<string, unknown> };
}

describe("the read replica", { skip: missing ?? false }, () => {
  let pair: ReplicaPair;
  let p: DemoPrincipals;
  let oscarToken: string;
  /** A direct connection to the replica, to pause and resume its replay. */
  let standby: pg.Client;
  /** A dead letter written on the primary while the replica's replay is paused. */
  let deadId: string;
  /** The job oscar's replay of it made. */
  let replayId: string;
  const listedIds = async () =>
    new Set((await listOpsJobs(p.root, { children: "1", limit: "100" })).jobs.map((j) => j.id));

  before(async () => {
    pair = await startReplicaPair("conveyor_replica", async (primaryUrl) => {
      await migrate(primaryUrl);
      setEnv({ DATABASE_URL: primaryUrl, DATABASE_DIRECT_URL: undefined, DATABASE_REPLICA_URL: undefined });
      p = await seedDemo(0.001);
      oscarToken = await createApiTokenForEmail("oscar@acme.test", "replica test");
      await closeDb();
    });
    setEnv({ DATABASE_REPLICA_URL: pair.replicaUrl, DATABASE_REPLICA_MAX_LAG_MS: LONG_BOUND_MS });
    standby = new pg.Client({ connectionString: pair.replicaUrl });
    await standby.connect();
  });
  after(async () => {
    await standby?.end().catch(() => {});
    await closeDb();
    await pair?.stop();
  });

  test("the console's lists, overview and metrics read the replica, and the metrics carry its lag", async () => {
    await probeReplica();
    assert.equal(replicaStatus()?.state, "ok", JSON.stringify(replicaStatus()));
    assert.deepEqual(readRoute(p.oscar), { source: "replica", reason: "replica" });
    const before = await listedIds();
    // From here the replica shows the past: what the primary gets next is not on it.
    await standby.query("SELECT pg_wal_replay_pause()");
    const { rows } = await pool().query<{ id: string }>(
      `INSERT INTO jobs (id, tenant_id, type, queue, status, input, input_hash, error_message, error_class,
                         attempts, max_attempts, finished_at, updated_at)
       VALUES (gen_random_uuid(), $1, 'probe', 'bulk', 'failed', '{}', 'r', 'boom', 'permanent', 1, 1, now(), now())
       RETURNING id`,
      [p.acmeId],
    );
    deadId = rows[0]!.id;
    await probeReplica();
    const status = replicaStatus()!;
    assert.equal(status.state, "ok", "within the bound: still read");
    assert.ok(status.lagBytes! > 0, `the replica is behind by the insert's WAL: ${JSON.stringify(status)}`);

    const listed = await listedIds();
    assert.ok(!listed.has(deadId), "the list read the replica: the new dead letter is not there yet");
    assert.deepEqual(listed, before);
    const overview = await getOverview(p.oscar, {});
    assert.equal(overview.readFrom, "replica");
    assert.equal(overview.replica?.state, "ok");
    assert.equal(typeof overview.replica?.lagMs, "number");

    const { body } = await renderMetrics();
    assert.match(body, /^conveyor_replica_in_use 1$/m);
    assert.match(body, /^conveyor_replica_up 1$/m);
    assert.match(body, /^conveyor_replica_lag_seconds \d+(\.\d+)?(e-?\d+)?$/m);
    const bytes = Number(/^conveyor_replica_lag_bytes (\d+)$/m.exec(body)?.[1]);
    assert.ok(bytes > 0, "the lag in bytes is exported");
    assert.match(body, /^conveyor_replica_max_lag_seconds 600$/m);
  });

  test("an operator's action: their list reads the primary at once, here and in another process by its cookie", async () => {
    const acted = await call(jobActionsRoute, oscarToken, "/api/v1/ops/jobs/actions", {
      body: { action: "replay", ids: [deadId] },
    });
    assert.equal(acted.res.status, 200, JSON.stringify(acted.json));
    assert.equal(acted.json.affected, 1);
    const setCookie = acted.res.headers.get("set-cookie") ?? "";
    assert.match(setCookie, new RegExp(`^${READ_PRIMARY_COOKIE}=\\d+; Max-Age=600; Path=/; HttpOnly; SameSite=Lax`));
    const cookie = setCookie.split(";")[0]!;
    const { rows } = await pool().query<{ id: string }>("SELECT id FROM jobs WHERE replay_of_id = $1", [deadId]);
    replayId = rows[0]!.id;

    const ids = async (c?: string) => {
      const r = await call(opsJobsRoute, oscarToken, "/api/v1/ops/jobs?limit=100", { cookie: c });
      assert.equal(r.res.status, 200, JSON.stringify(r.json));
      return new Set((r.json.jobs as { id: string }[]).map((j) => j.id));
    };
    // This process remembers oscar's write.
    assert.ok((await ids()).has(replayId), "right after the action the list reads the primary");
    // Another process knows only the cookie the response set.
    forgetWrites();
    assert.ok((await ids(cookie)).has(replayId), "with the action's cookie, the list reads the primary");
    // Neither: the replica, still paused before the replay.
    assert.ok(!(await ids()).has(replayId), "without the window the list reads the replica");
    // Someone who did not act reads the replica meanwhile.
    assert.ok(!(await listedIds()).has(replayId));
  });

  test("past the lag bound the reads fall back to the primary, and return once the replica caught up", async () => {
    setEnv({ DATABASE_REPLICA_MAX_LAG_MS: "100" });
    await waitFor(
      "the probe to find the paused replica over a 100 ms bound",
      async () => {
        await probeReplica();
        return replicaStatus()?.state === "lagging";
      },
      30_000,
      () => JSON.stringify(replicaStatus()),
    );
    assert.deepEqual(readRoute(p.root), { source: "primary", reason: "lagging" });
    const listed = await listedIds();
    assert.ok(listed.has(deadId) && listed.has(replayId), "the list read the primary");
    const overview = await getOverview(p.oscar, {});
    assert.equal(overview.readFrom, "primary");
    assert.equal(overview.replica?.state, "lagging");
    assert.ok(overview.replica!.lagMs! > 100, JSON.stringify(overview.replica));
    const { body } = await renderMetrics();
    assert.match(body, /^conveyor_replica_in_use 0$/m);
    assert.match(body, /^conveyor_replica_up 1$/m);
    const lag = Number(/^conveyor_replica_lag_seconds (\S+)$/m.exec(body)?.[1]);
    assert.ok(lag > 0.1, `the lag over the bound is exported: ${lag}`);

    await standby.query("SELECT pg_wal_replay_resume()");
    setEnv({ DATABASE_REPLICA_MAX_LAG_MS: LONG_BOUND_MS });
    await waitFor(
      "the replica to catch up",
      async () => {
        await probeReplica();
        return replicaStatus()?.state === "ok" && replicaStatus()?.lagBytes === 0;
      },
      30_000,
      () => JSON.stringify(replicaStatus()),
    );
    assert.equal(readRoute(p.root).source, "replica");
    const caughtUp = await listedIds();
    assert.ok(caughtUp.has(deadId) && caughtUp.has(replayId), "the replica has replayed both");
  });

  test("with the replica stopped, the console answers from the primary, and uses it again once it is back", async () => {
    await standby.end();
    await pair.stopReplica();
    // The last probe found it well: the first read tries it, fails, and is answered by the primary.
    assert.equal(readRoute(p.root).source, "replica");
    const listed = await listedIds();
    assert.ok(listed.has(replayId), "answered");
    assert.equal(replicaStatus()?.state, "down");
    assert.deepEqual(readRoute(p.root), { source: "primary", reason: "down" });
    const overview = await getOverview(p.root, {});
    assert.equal(overview.readFrom, "primary");
    assert.equal(overview.replica?.state, "down");
    await probeReplica();
    const { body } = await renderMetrics();
    assert.match(body, /^conveyor_replica_up 0$/m);
    assert.match(body, /^conveyor_replica_in_use 0$/m);
    assert.doesNotMatch(body, /^conveyor_replica_lag_seconds /m, "no lag sample while it does not answer");
    assert.match(body, /^conveyor_queue_slots\{queue="bulk"\} 0$/m, "the rest of the metrics, from the primary");

    await pair.startReplica();
    await waitFor(
      "the probe to find the replica again",
      async () => {
        await probeReplica();
        return replicaStatus()?.state === "ok";
      },
      30_000,
      () => JSON.stringify(replicaStatus()),
    );
    assert.equal((await getOverview(p.root, {})).readFrom, "replica");
  });
});
