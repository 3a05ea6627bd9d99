import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createPause } from "@/lib/admission/pauses";
import { pool } from "@/lib/db";
import { AppError } from "@/lib/errors";
import { replayDeadLetters } from "@/lib/jobs/dead-letters";
import { enqueueJob } from "@/lib/jobs/enqueue";
import { fingerprintSql, maskErrorMessage } from "@/lib/jobs/fingerprint";
import { registerWorker } from "@/lib/jobs/workers";
import { listAudit, listDeadLetterGroups, listStuckJobs, listWorkers } from "@/lib/ops/console";
import { useTestDatabase } from "../helpers/db";
import { isCode } from "../helpers/fixtures";

const fx = useTestDatabase();

async function probe(tenantId: string): Promise<string> {
  return (await enqueueJob({ tenantId, type: "probe", input: { sleepMs: 0 } })).job.id;
}

/** A job moved through running to `status` with `message`, as a worker would leave it. */
async function jobIn(tenantId: string, status: "failed" | "retrying", message: string, attempts = 1) {
  const id = await probe(tenantId);
  await pool().query(`UPDATE jobs SET status = 'running', attempts = $2, started_at = now() WHERE id = $1`, [
    id,
    attempts,
  ]);
  await pool().query(
    `UPDATE jobs SET status = $2::job_status, error_class = 'retryable', error_message = $3, admitted_at = NULL,
            finished_at = CASE WHEN $2 = 'failed' THEN now() END WHERE id = $1`,
    [id, status, message],
  );
  return id;
}

describe("dead letters grouped by error", () => {
  test("messages that differ only in ids and numbers form one group, which can be replayed", async () => {
    await jobIn(fx.p.acmeId, "failed", "timeout after 3012 ms calling job 01a22741-eb5c-7699-98f5-100b9b6722d7");
    await jobIn(fx.p.acmeId, "failed", "timeout after 2988 ms calling job 01a22741-eb5c-7699-98f5-100b9b672200");
    await jobIn(fx.p.acmeId, "failed", "upstream answered 503");
    await jobIn(fx.p.globexId, "failed", "timeout after 10 ms calling job 01a22741-eb5c-7699-98f5-100b9b6722ff");

    const groups = await listDeadLetterGroups(fx.p.oscar, {});
    assert.deepEqual(
      groups.map((g) => [g.count, g.fingerprint]),
      [
        [2, "timeout after <duration> calling job <id>"],
        [1, "upstream answered <n>"],
      ],
    );
    assert.match(groups[0]!.sample!, /^timeout after \d+ ms/);
    const all = await listDeadLetterGroups(fx.p.root, {});
    assert.equal(all[0]!.count, 3, "a platform admin sees every tenant's");
    assert.equal(all[0]!.tenants, 2);
    assert.equal((await listDeadLetterGroups(fx.p.root, { tenant: "globex" }))[0]!.count, 1);
    await assert.rejects(listDeadLetterGroups(fx.p.ada, {}), isCode("forbidden"));
    await assert.rejects(listDeadLetterGroups(fx.p.oscar, { tenant: "globex" }), isCode("not_found"));

    const replayed = await replayDeadLetters(fx.p.oscar, {
      filter: { type: "probe", errorClass: "retryable", fingerprint: groups[0]!.fingerprint! },
    });
    assert.deepEqual([replayed.matched, replayed.replayed], [2, 2]);
    assert.deepEqual(
      (await listDeadLetterGroups(fx.p.oscar, {})).map((g) => g.count),
      [1],
    );
  });

  test("Postgres masks as lib/jobs/fingerprint.ts does: one crash on many workers is one group", async () => {
    const samples = [
      "worker vm:31405:1fd691 stopped renewing its lease",
      "worker ip-10-0-3-7.ec2.internal:88:abc123 stopped renewing its lease",
      "connect ECONNREFUSED 10.0.0.5:5432 after 1.5s",
      "POST http://hooks.example.com:8443/in answered HTTP 500; gave up after 8 requests",
      "message 01HZX3Y4K5M6N7P8Q9R0S1T2V3 (object 9f86d081884c7d65) took 3 minutes",
      "Line 3: customer_id 42 is not a customer",
    ];
    for (const s of samples) {
      const { rows } = await pool().query<{ f: string }>(`SELECT ${fingerprintSql("$1::text")} AS f`, [s]);
      assert.equal(rows[0]!.f, maskErrorMessage(s), s);
    }
    const marker = `lease-${Date.now()}`;
    await jobIn(fx.p.acmeId, "failed", `${marker} worker vm:31405:1fd691 stopped renewing its lease`);
    await jobIn(fx.p.acmeId, "failed", `${marker} worker vm:2207:0c9e1a stopped renewing its lease`);
    const mine = (await listDeadLetterGroups(fx.p.oscar, {})).filter((g) => g.sample?.startsWith(marker));
    assert.deepEqual(
      mine.map((g) => g.count),
      [2],
    );
  });

  test("one entry per job people see (a stage fails with its pipeline), filtered as the CLI filters", async () => {
    const parent = await jobIn(fx.p.acmeId, "failed", "Stage parse failed: Line 2: bad date");
    const child = await jobIn(fx.p.acmeId, "failed", "Line 2: bad date");
    await pool().query(`UPDATE jobs SET parent_id = $2 WHERE id = $1`, [child, parent]);
    await pool().query(`UPDATE jobs SET error_class = 'permanent' WHERE id = ANY($1::uuid[])`, [[parent, child]]);
    const groups = await listDeadLetterGroups(fx.p.oscar, { errorClass: "permanent" });
    assert.deepEqual(
      groups.map((g) => [g.count, g.sample]),
      [[1, "Stage parse failed: Line 2: bad date"]],
    );
    assert.equal(groups[0]!.queue, "bulk");
    assert.deepEqual(await listDeadLetterGroups(fx.p.oscar, { errorClass: "permanent", queue: "webhooks" }), []);
    assert.deepEqual(await listDeadLetterGroups(fx.p.oscar, { errorClass: "permanent", type: "export" }), []);
    const later = new Date(Date.now() + 60_000).toISOString();
    assert.deepEqual(await listDeadLetterGroups(fx.p.oscar, { errorClass: "permanent", from: later }), []);
    await assert.rejects(listDeadLetterGroups(fx.p.oscar, { since: "1h" }), isCode("invalid_input"));
  });
});

describe("stuck jobs", () => {
  test("pauses (at once), waiting parents, expired leases, late heartbeats, long waits and repeated retries, each apart with advice", async () => {
    const expired = await probe(fx.p.acmeId);
    await pool().query(
      `UPDATE jobs SET status = 'running', lease_owner = 'w', lease_expires_at = now() - interval '5 seconds',
              heartbeat_at = now() - interval '40 seconds' WHERE id = $1`,
      [expired],
    );
    const silent = await probe(fx.p.acmeId);
    await pool().query(
      `UPDATE jobs SET status = 'running', lease_owner = 'w', lease_expires_at = now() + interval '1 minute',
              heartbeat_at = now() - interval '2 minutes' WHERE id = $1`,
      [silent],
    );
    const pause = await createPause(fx.p.oscar, { type: "export", reason: "stuck-test maintenance" });
    const [acme] = (await pool().query(`SELECT id FROM tenants WHERE slug = 'acme'`)).rows as { id: string }[];
    const waiting = (
      await enqueueJob({
        tenantId: acme!.id,
        type: "export",
        input: { dataset: "orders" },
        runAt: new Date(Date.now() - 30 * 60_000),
      })
    ).job.id;
    // Due a moment ago: a pause lists it at once, not after queuedMinutes.
    const justPaused = (
      await enqueueJob({
        tenantId: acme!.id,
        type: "export",
        input: { dataset: "events" },
        runAt: new Date(Date.now() - 1000),
      })
    ).job.id;
    // Not paused, waiting long for a slot.
    const slow = await probe(fx.p.acmeId);
    await pool().query(`UPDATE jobs SET run_at = now() - interval '30 minutes', admitted_at = NULL WHERE id = $1`, [
      slow,
    ]);
    // A parent waiting for its parts (no lease, no heartbeat for minutes), one part held by the pause.
    const parent = await probe(fx.p.acmeId);
    await pool().query(
      `UPDATE jobs SET status = 'running', lease_owner = NULL, lease_expires_at = NULL, waiting_since = now() - interval '1 minute',
              heartbeat_at = now() - interval '5 minutes', progress_stage = 'waiting', children_total = 1 WHERE id = $1`,
      [parent],
    );
    const part = (await enqueueJob({ tenantId: acme!.id, type: "export", input: { dataset: "orders" } })).job.id;
    await pool().query(`UPDATE jobs SET parent_id = $2, child_index = 0, admitted_at = NULL WHERE id = $1`, [
      part,
      parent,
    ]);
    const retrying = await jobIn(fx.p.acmeId, "retrying", "connection refused", 4);
    const other = await probe(fx.p.globexId);
    await pool().query(
      `UPDATE jobs SET status = 'running', lease_expires_at = now() - interval '5 seconds' WHERE id = $1`,
      [other],
    );

    const stuck = await listStuckJobs(fx.p.oscar, {});
    const byId = new Map(stuck.map((s) => [s.id, s]));
    assert.equal(byId.get(expired)?.kind, "lease_expired");
    assert.equal(byId.get(silent)?.kind, "no_heartbeat");
    assert.equal(byId.get(waiting)?.kind, "paused");
    assert.match(byId.get(waiting)!.suggestion, /Resume the pause/);
    assert.equal(byId.get(waiting)!.pause?.id, pause.id);
    assert.equal(byId.get(waiting)!.pause?.reason, "stuck-test maintenance");
    assert.equal(byId.get(justPaused)?.kind, "paused", "a paused job is listed at once");
    assert.equal(byId.get(slow)?.kind, "queued_too_long");
    assert.match(byId.get(slow)!.detail, /Waiting for a slot/);
    assert.equal(byId.get(parent)?.kind, "waiting_parent", "a waiting parent is not a silent worker");
    assert.equal(byId.get(parent)!.pause?.id, pause.id);
    assert.match(byId.get(parent)!.detail, /Waiting for 1 parts, held/);
    assert.doesNotMatch(
      stuck.map((s) => s.suggestion).join(" "),
      /Workers page/,
      "an operator is not sent to a page they cannot open",
    );
    assert.equal(byId.get(retrying)?.kind, "retrying_repeatedly");
    assert.match(byId.get(retrying)!.detail, /connection refused/);
    assert.equal(byId.has(other), false, "another tenant's job is not listed");
    assert.ok((await listStuckJobs(fx.p.root, {})).some((s) => s.id === other));
    await assert.rejects(listStuckJobs(fx.p.oscar, { queuedMinutes: "soon" }), (e: unknown) => {
      assert.ok(e instanceof AppError && e.fields?.[0]?.path === "queuedMinutes");
      return true;
    });
    await assert.rejects(listStuckJobs(fx.p.ada, {}), isCode("forbidden"));
  });
});

describe("workers and audit", () => {
  test("the fleet is for platform admins, with each worker's running jobs", async () => {
    await registerWorker({ id: "console-test-worker", queues: ["bulk"], concurrency: 3 });
    const id = await probe(fx.p.acmeId);
    await pool().query(`UPDATE jobs SET status = 'running', lease_owner = 'console-test-worker' WHERE id = $1`, [id]);
    const workers = await listWorkers(fx.p.root);
    const w = workers.find((x) => x.id === "console-test-worker");
    assert.deepEqual(
      { queues: w?.queues, concurrency: w?.concurrency, runningJobs: w?.runningJobs, state: w?.state },
      { queues: ["bulk"], concurrency: 3, runningJobs: 1, state: "running" },
    );
    await assert.rejects(listWorkers(fx.p.oscar), isCode("forbidden"));
  });

  test("the audit log is scoped, filterable and paged", async () => {
    await createPause(fx.p.oscar, { queue: "interactive", reason: "audit test" });
    await createPause(fx.p.root, { tenant: "globex", queue: "interactive" });
    const mine = await listAudit(fx.p.oscar, { action: "queue." });
    assert.ok(mine.entries.length >= 1);
    assert.ok(mine.entries.every((e) => e.action.startsWith("queue.") && e.tenant?.slug === "acme"));
    assert.equal(mine.entries[0]!.actor, "oscar@acme.test");
    const ginas = await listAudit(fx.p.gina, {});
    assert.ok(
      ginas.entries.every((e) => e.tenant?.slug === "globex"),
      "never another tenant's entries",
    );
    const byRoot = await listAudit(fx.p.root, { actor: "root@" });
    assert.ok(byRoot.entries.some((e) => e.tenant?.slug === "globex"));

    // Keyset paging walks every entry once.
    const seen = new Set<string>();
    let cursor: string | undefined;
    do {
      const page = await listAudit(fx.p.root, { limit: 2, ...(cursor ? { cursor } : {}) });
      for (const e of page.entries) {
        assert.equal(seen.has(e.id), false);
        seen.add(e.id);
      }
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    const total = Number((await pool().query(`SELECT count(*) AS n FROM audit_logs`)).rows[0].n);
    assert.equal(seen.size, total);
    await assert.rejects(listAudit(fx.p.oscar, { cursor: "x" }), isCode("invalid_input"));
    await assert.rejects(listAudit(fx.p.ada, {}), isCode("forbidden"));
  });
});
