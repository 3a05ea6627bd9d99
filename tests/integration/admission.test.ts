import { beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
import { runOnce } from "graphile-worker";
import { admitAll, admitQueue, describeQueueSeed, seedQueueSettings } from "@/lib/admission/admitter";
import { createPause, listPauses, resumePause } from "@/lib/admission/pauses";
import { getQueues, setTenantLimit, updateQueueSettings } from "@/lib/admission/queues";
import { db, pool } from "@/lib/db";
import { AppError } from "@/lib/errors";
import { eventHub, type JobEvent } from "@/lib/events/hub";
import { enqueueJob } from "@/lib/jobs/enqueue";
import { reap } from "@/lib/jobs/reaper";
import { createApiTokenForEmail, principalFromToken } from "@/lib/auth/tokens";
import { getJob } from "@/lib/jobs/queries";
import { runJob } from "@/lib/jobs/runner";
import { useTestDatabase } from "../helpers/db";
import { drainJobs, quietLogger, isCode } from "../helpers/fixtures";
import { taskListFor } from "../../worker/task-list";
import { databaseUrl, resetEnvCache } from "@/lib/env";
import { workerArgs } from "../helpers/worker";

const fx = useTestDatabase();

beforeEach(async () => {
  // Each test starts with an empty fleet of work, default settings and no pauses.
  await pool().query(`DELETE FROM graphile_worker._private_jobs`);
  await pool().query(`DELETE FROM jobs`);
  await pool().query(`DELETE FROM queue_pauses`);
  await pool().query(`DELETE FROM tenant_queue_limits`);
  await pool().query(`DELETE FROM admission_state`);
  await pool().query(`UPDATE queues SET tenant_cap = CASE name WHEN 'bulk' THEN 8 ELSE 4 END,
                        max_admitted = CASE name WHEN 'bulk' THEN 64 ELSE 32 END, vclock = 0, saturated = false,
                        configured_at = now(), updated_by_id = NULL`);
});

const probe = async (tenantId: string, sleepMs = 0) =>
  (await enqueueJob({ tenantId, type: "probe", input: { sleepMs } })).job.id;
const job = (id: string) => db().job.findUniqueOrThrow({ where: { id } });
const dispatches = async (id: string) =>
  (await pool().query(`SELECT count(*)::int AS n FROM graphile_worker.jobs WHERE key = $1`, [id])).rows[0].n as number;

/** Runs admitted jobs one at a time, admitting after each batch, and returns job ids in the order they started. */
async function runInOrder(): Promise<string[]> {
  do {
    await runOnce({ connectionString: databaseUrl(), taskList: taskListFor(), concurrency: 1, logger: quietLogger });
  } while ((await admitAll()) > 0);
  const { rows } = await pool().query<{ jobId: string }>(
    `SELECT job_id AS "jobId" FROM job_attempts ORDER BY started_at, id`,
  );
  return rows.map((r) => r.jobId);
}

describe("pause and resume", () => {
  test("after a pause a new job of the scope waits, other scopes run; resume starts it", async () => {
    const pause = await createPause(fx.p.oscar, { type: "probe", reason: "deploying a fix" });
    assert.equal(pause.tenant?.id, fx.p.acmeId, "an operator's pause is scoped to their tenant");
    assert.equal(pause.createdBy, "oscar@acme.test");

    const events: JobEvent[] = [];
    const unsubscribe = await eventHub().subscribe({ tenantId: fx.p.acmeId }, (e) => events.push(e));
    const waiting = await probe(fx.p.acmeId);
    const other = await probe(fx.p.globexId);
    assert.equal((await job(waiting)).admittedAt, null);
    assert.equal((await getJob(fx.p.ada, waiting)).admission, "paused", "the member sees why it waits");
    assert.equal((await getJob(fx.p.gus, other)).admission, "admitted");
    assert.equal(await dispatches(waiting), 0, "a paused job never reaches graphile-worker");
    await drainJobs();
    assert.equal((await job(waiting)).status, "queued");
    assert.equal((await job(other)).status, "succeeded", "Globex is not paused");

    const resumed = await resumePause(fx.p.oscar, pause.id);
    assert.equal(resumed.resumedBy, "oscar@acme.test");
    assert.equal(await dispatches(waiting), 1, "resume admits at once");
    assert.equal((await getJob(fx.p.ada, waiting)).admission, "admitted");
    for (let i = 0; i < 50 && !events.some((e) => e.jobId === waiting && e.admission === "admitted"); i++) {
      await sleep(20);
    }
    unsubscribe();
    assert.deepEqual(
      events.filter((e) => e.jobId === waiting).map((e) => e.admission),
      ["paused", "admitted"],
      "being admitted is a visible change, announced to the job's watchers",
    );
    await drainJobs();
    assert.equal((await job(waiting)).status, "succeeded");

    const audit = await db().auditLog.findMany({ where: { targetIds: { has: pause.id } }, orderBy: { id: "asc" } });
    assert.deepEqual(
      audit.map((a) => a.action),
      ["queue.pause", "queue.resume"],
    );
  });

  test("a job created into a pause does not wake the admitters; one that waits for a slot does", async () => {
    const listener = await pool().connect();
    const woken: string[] = [];
    listener.on("notification", (m) => {
      if (m.channel === "conveyor_admit") woken.push(m.payload ?? "");
    });
    try {
      await listener.query("LISTEN conveyor_admit");
      const pause = await createPause(fx.p.oscar, { queue: "bulk" });
      const held = await probe(fx.p.acmeId);
      await probe(fx.p.globexId); // Globex is not paused, and is admitted in its own INSERT
      await sleep(200);
      assert.deepEqual(woken, [], "nothing to admit: the pause holds it, and its resume admits it");

      await resumePause(fx.p.oscar, pause.id);
      assert.equal(await dispatches(held), 1, "the resume admitted it at once");
      await updateQueueSettings(fx.p.root, "bulk", { tenantCap: 1 });
      await sleep(100);
      woken.length = 0;
      await probe(fx.p.acmeId); // Acme's one slot is taken by the job admitted above
      for (let i = 0; i < 50 && woken.length === 0; i++) await sleep(20);
      assert.deepEqual(woken, ["bulk"], "a job waiting for a slot tells the admitters");
    } finally {
      await listener.query("UNLISTEN *").catch(() => {});
      listener.release();
    }
  });

  test("a pause takes back admitted jobs, keeps their order, and a claim racing it refuses to start", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await probe(fx.p.acmeId));
    assert.ok((await job(ids[0]!)).admittedAt, "admitted at once: nothing paused, room under the cap");

    const pause = await createPause(fx.p.oscar, { queue: "bulk" });
    assert.equal(pause.heldBack, 5);
    for (const id of ids) {
      assert.equal(await dispatches(id), 0);
      assert.equal((await job(id)).admittedAt, null);
    }
    await drainJobs();
    assert.equal(await db().job.count({ where: { status: "queued" } }), 5);

    await resumePause(fx.p.oscar, pause.id);
    assert.deepEqual(await runInOrder(), ids, "waiting jobs keep their order");

    // A dispatch fetched just before a pause: the claim sees the pause and hands the job back.
    const raced = await probe(fx.p.acmeId);
    assert.ok((await job(raced)).admittedAt);
    await pool().query(`INSERT INTO queue_pauses (id, queue, tenant_id) VALUES (gen_random_uuid(), 'bulk', $1)`, [
      fx.p.acmeId,
    ]);
    assert.equal(await runJob(raced, { workerId: "racer", type: "probe", log: () => {} }), "skipped");
    const handedBack = await job(raced);
    assert.equal(handedBack.status, "queued");
    assert.equal(handedBack.admittedAt, null, "its slot is freed");
    assert.equal(handedBack.attempts, 0);
    await pool().query(`UPDATE queue_pauses SET resumed_at = now()`);
    await drainJobs();
    assert.equal((await job(raced)).status, "succeeded");

    // A stale dispatch of a job that is no longer admitted never starts it.
    const stale = await probe(fx.p.acmeId);
    await pool().query(`UPDATE jobs SET admitted_at = NULL WHERE id = $1`, [stale]);
    assert.equal(await runJob(stale, { workerId: "stale", type: "probe", log: () => {} }), "skipped");
    assert.equal((await job(stale)).attempts, 0);
  });

  test("a waiting job left with a cancel request is ended by the reaper, never left behind", async () => {
    const id = await probe(fx.p.acmeId);
    // What a cancel racing the end of an attempt could leave: waiting, unadmitted, cancel requested.
    await pool().query(`UPDATE jobs SET status = 'running' WHERE id = $1`, [id]);
    await pool().query(
      `UPDATE jobs SET status = 'retrying', admitted_at = NULL, cancel_requested_at = now() WHERE id = $1`,
      [id],
    );
    await reap({ deadAfterMs: 60_000 });
    assert.equal((await job(id)).status, "cancelled");
  });

  test("cancelRunning cancels the scope's running jobs; without it they finish", async () => {
    const running = await probe(fx.p.acmeId, 30_000);
    const run = runJob(running, { workerId: "w1", type: "probe", log: () => {} });
    for (let i = 0; i < 100 && (await job(running)).status !== "running"; i++) await sleep(20);
    const t0 = Date.now();
    const pause = await createPause(fx.p.oscar, { queue: "bulk", cancelRunning: true });
    assert.equal(pause.cancelled, 1);
    assert.equal(await run, "cancelled");
    assert.ok(Date.now() - t0 < 2_000, "stopped within the pause's 2 seconds");
    assert.equal((await job(running)).status, "cancelled");
    await resumePause(fx.p.oscar, pause.id);

    const finishing = await probe(fx.p.acmeId, 300);
    const run2 = runJob(finishing, { workerId: "w1", type: "probe", log: () => {} });
    for (let i = 0; i < 100 && (await job(finishing)).status !== "running"; i++) await sleep(20);
    await createPause(fx.p.oscar, { queue: "bulk" });
    assert.equal(await run2, "succeeded", "a running job finishes when the operator does not ask to cancel");
  });

  test("who may pause what: operators their tenant, admins any scope; bad input names the field", async () => {
    await assert.rejects(createPause(fx.p.ada, { queue: "bulk" }), isCode("forbidden"), "members may not pause");
    await assert.rejects(createPause(fx.p.oscar, { tenant: "globex" }), isCode("not_found"));
    await assert.rejects(createPause(fx.p.oscar, { tenant: fx.p.globexId, queue: "bulk" }), isCode("not_found"));
    await assert.rejects(createPause(fx.p.oscar, { queue: "nightly" }), (e: unknown) => {
      assert.ok(e instanceof AppError && e.code === "invalid_input");
      assert.equal(e.fields?.[0]?.path, "queue");
      return true;
    });
    await assert.rejects(createPause(fx.p.oscar, { type: "nope" }), (e: unknown) => {
      assert.ok(e instanceof AppError && e.fields?.[0]?.path === "type");
      return true;
    });
    await assert.rejects(createPause(fx.p.oscar, { queue: "bulk", extra: 1 }), isCode("invalid_input"));
    await assert.rejects(createPause(fx.p.root, {}), isCode("invalid_input"), "an admin names a scope");

    const own = await createPause(fx.p.oscar, { queue: "interactive" });
    await assert.rejects(createPause(fx.p.oscar, { queue: "interactive" }), isCode("conflict"));
    const global = await createPause(fx.p.root, { queue: "bulk", reason: "maintenance" });
    assert.equal(global.tenant, null);
    const globex = await createPause(fx.p.root, { tenant: "globex", type: "export" });
    assert.equal(globex.tenant?.slug, "globex");

    // Operators see their own and the platform-wide pauses, never another tenant's.
    const seen = (await listPauses(fx.p.oscar)).map((x) => x.id).sort();
    assert.deepEqual(seen, [own.id, global.id].sort());
    assert.equal((await listPauses(fx.p.root)).length, 3);
    await assert.rejects(resumePause(fx.p.oscar, globex.id), isCode("not_found"));
    await assert.rejects(resumePause(fx.p.oscar, global.id), isCode("forbidden"));
    await assert.rejects(resumePause(fx.p.oscar, "not-a-uuid"), isCode("not_found"));
    await resumePause(fx.p.oscar, own.id);
    await assert.rejects(resumePause(fx.p.oscar, own.id), isCode("conflict"));
    await resumePause(fx.p.root, global.id);
    // A platform admin's pause of Acme stays until a platform admin lifts it.
    const byAdmin = await createPause(fx.p.root, { tenant: "acme", queue: "bulk" });
    assert.ok(
      (await listPauses(fx.p.oscar)).some((x) => x.id === byAdmin.id),
      "the operator sees it",
    );
    await assert.rejects(resumePause(fx.p.oscar, byAdmin.id), isCode("forbidden"));
    await resumePause(fx.p.root, byAdmin.id);
  });

  test("the queues view counts waiting, running and paused work; operators see their tenant only", async () => {
    await createPause(fx.p.oscar, { type: "probe" });
    await probe(fx.p.acmeId);
    await probe(fx.p.acmeId);
    await probe(fx.p.globexId);
    const asOscar = (await getQueues(fx.p.oscar)).queues.find((q) => q.name === "bulk")!;
    assert.deepEqual(
      asOscar.tenants.map((t) => t.tenant.slug),
      ["acme"],
    );
    assert.equal(asOscar.waiting, 2);
    assert.equal(asOscar.admitted, 0);
    assert.equal(asOscar.pauses.length, 1);
    assert.equal(asOscar.tenantCap, 8);
    const asRoot = (await getQueues(fx.p.root)).queues.find((q) => q.name === "bulk")!;
    assert.equal(asRoot.waiting, 2);
    assert.equal(asRoot.admitted, 1, "Globex's job was admitted");
    await assert.rejects(getQueues(fx.p.ada), isCode("forbidden"));
  });
});

test("a platform admin's tenantless token acts as the admin, and dies with the role", async () => {
  const secret = await createApiTokenForEmail("root@conveyor.test", "ops");
  const asToken = await principalFromToken(secret);
  assert.equal(asToken?.isPlatformAdmin, true);
  assert.equal(asToken?.tenantId, null);
  assert.equal((await getQueues(asToken!)).queues[0]!.tenants.length, 2, "both tenants");
  await pool().query(`UPDATE users SET is_platform_admin = false WHERE email = 'root@conveyor.test'`);
  await pool().query(
    `INSERT INTO memberships (user_id, tenant_id, role)
                      SELECT id, $1, 'operator' FROM users WHERE email = 'root@conveyor.test'`,
    [fx.p.acmeId],
  );
  try {
    assert.equal(await principalFromToken(secret), null, "never falls back to a membership gained since");
  } finally {
    await pool().query(
      `DELETE FROM memberships WHERE user_id = (SELECT id FROM users WHERE email = 'root@conveyor.test')`,
    );
    await pool().query(`UPDATE users SET is_platform_admin = true WHERE email = 'root@conveyor.test'`);
  }
});

describe("caps and fairness", () => {
  test("a tenant's cap holds; the next job is admitted when a slot frees", async () => {
    await setTenantLimit(fx.p.root, "bulk", "acme", { maxRunning: 2 });
    await assert.rejects(setTenantLimit(fx.p.oscar, "bulk", "acme", { maxRunning: 9 }), isCode("forbidden"));
    await assert.rejects(setTenantLimit(fx.p.root, "bulk", "acme", { maxRunning: -1 }), (e: unknown) => {
      assert.ok(e instanceof AppError && e.fields?.[0]?.path === "maxRunning");
      return true;
    });
    await assert.rejects(setTenantLimit(fx.p.root, "nightly", "acme", {}), isCode("not_found"));
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push(await probe(fx.p.acmeId));
    const admitted = await db().job.count({ where: { tenantId: fx.p.acmeId, admittedAt: { not: null } } });
    assert.equal(admitted, 2);
    assert.equal((await getJob(fx.p.ada, ids[2]!)).admission, "waiting", "at its tenant's cap: waiting its turn");
    assert.equal(await admitQueue("bulk"), 0, "no room until a job ends");
    assert.deepEqual(await runInOrder(), ids, "all run, in order, two at a time at most");
    const view = (await getQueues(fx.p.root)).queues.find((q) => q.name === "bulk")!;
    assert.equal(view.tenants.find((t) => t.tenant.slug === "acme")?.cap, 2);
  });

  test("round-robin: Globex is not starved behind Acme's flood, and Acme's order is kept", async () => {
    await pool().query(`UPDATE queues SET max_admitted = 2 WHERE name = 'bulk'`);
    const acme: string[] = [];
    for (let i = 0; i < 20; i++) acme.push(await probe(fx.p.acmeId));
    const globex: string[] = [];
    for (let i = 0; i < 3; i++) globex.push(await probe(fx.p.globexId));
    const order = await runInOrder();
    assert.equal(order.length, 23);
    const positions = globex.map((id) => order.indexOf(id));
    assert.ok(positions[0]! <= 3, `Globex's first job started ${positions[0]}th, not after Acme's backlog`);
    assert.ok(positions[2]! <= 8, `Globex's jobs interleave with Acme's (positions ${positions.join(", ")})`);
    assert.deepEqual(
      order.filter((id) => acme.includes(id)),
      acme,
      "ordering inside a tenant is kept",
    );
  });

  test("priorities order a tenant's waiting jobs: lower runs first, then first come", async () => {
    await setTenantLimit(fx.p.root, "bulk", "acme", { maxRunning: 1 });
    const first = await probe(fx.p.acmeId);
    const later = await probe(fx.p.acmeId);
    const urgent = (await enqueueJob({ tenantId: fx.p.acmeId, type: "probe", input: { sleepMs: 0 }, priority: -5 })).job
      .id;
    assert.deepEqual(await runInOrder(), [first, urgent, later]);
  });

  test("weights: a tenant with weight 3 gets three turns to another's one", async () => {
    await pool().query(`UPDATE queues SET max_admitted = 8 WHERE name = 'bulk'`);
    await setTenantLimit(fx.p.root, "bulk", "acme", { maxRunning: 100, weight: 1 });
    await setTenantLimit(fx.p.root, "bulk", "globex", { maxRunning: 100, weight: 3 });
    const pause = await createPause(fx.p.root, { queue: "bulk" });
    for (let i = 0; i < 20; i++) {
      await probe(fx.p.acmeId);
      await probe(fx.p.globexId);
    }
    await resumePause(fx.p.root, pause.id);
    const admitted = await pool().query<{ tenant: string; n: number }>(
      `SELECT t.slug AS tenant, count(*)::int AS n FROM jobs j JOIN tenants t ON t.id = j.tenant_id
       WHERE j.admitted_at IS NOT NULL GROUP BY 1 ORDER BY 1`,
    );
    assert.deepEqual(
      admitted.rows.map((r) => [r.tenant, r.n]),
      [
        ["acme", 2],
        ["globex", 6],
      ],
    );
  });

  test("a retry gives its slot back while its backoff runs", async () => {
    await setTenantLimit(fx.p.root, "bulk", "acme", { maxRunning: 1 });
    const first = await probe(fx.p.acmeId);
    const second = await probe(fx.p.acmeId);
    assert.equal((await job(second)).admittedAt, null);
    // The first job's attempt is lost to a crash with a backoff: the second takes the slot.
    await pool().query(`UPDATE jobs SET status = 'running' WHERE id = $1`, [first]);
    await pool().query(
      `UPDATE jobs SET status = 'retrying', admitted_at = NULL, run_at = now() + interval '1 hour' WHERE id = $1`,
      [first],
    );
    assert.equal(await admitQueue("bulk"), 1);
    assert.ok((await job(second)).admittedAt);
    assert.equal((await job(first)).admittedAt, null, "not admitted before it is due");
  });
});

describe("queue settings live in the database", () => {
  const bulk = async () =>
    (
      await pool().query<{ cap: number; window: number }>(
        `SELECT tenant_cap AS cap, max_admitted AS window FROM queues WHERE name = 'bulk'`,
      )
    ).rows[0]!;
  async function withEnv<T>(vars: Record<string, string>, fn: () => Promise<T>): Promise<T> {
    const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
    Object.assign(process.env, vars);
    resetEnvCache();
    try {
      return await fn();
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
      resetEnvCache();
    }
  }

  test("a worker's QUEUE_* seed a queue once; later workers' environments and admins' edits are not overwritten", async () => {
    // As the migrations leave it: their defaults, seeded by no worker yet.
    await pool().query(`UPDATE queues SET configured_at = NULL`);
    const first = await withEnv({ QUEUE_BULK_TENANT_CAP: "11", QUEUE_BULK_WINDOW: "40" }, seedQueueSettings);
    assert.deepEqual(await bulk(), { cap: 11, window: 40 }, "the first worker's environment seeds it");
    assert.equal(first.find((r) => r.name === "bulk")?.seeded, true);
    assert.match(describeQueueSeed(first).join("\n"), /queue bulk: seeded cap 11, window 40 from the environment/);

    // A worker started later with another environment changes nothing, and says why.
    const later = await withEnv({ QUEUE_BULK_TENANT_CAP: "13" }, seedQueueSettings);
    assert.deepEqual(await bulk(), { cap: 11, window: 40 });
    assert.equal(later.find((r) => r.name === "bulk")?.seeded, false);
    assert.match(describeQueueSeed(later).join("\n"), /queue bulk: cap 11, window 40 from the database; .*only seed/);

    // Two workers starting at once on a fresh queue: one seeds, the other keeps its values.
    await pool().query(`UPDATE queues SET configured_at = NULL WHERE name = 'bulk'`);
    const [a, b] = await Promise.all([
      withEnv({ QUEUE_BULK_TENANT_CAP: "21" }, seedQueueSettings),
      seedQueueSettings(),
    ]);
    const seededBy = [a, b].filter((r) => r.find((x) => x.name === "bulk")?.seeded);
    assert.equal(seededBy.length, 1, "exactly one seeded the queue");

    // An admin's edit stays whatever the next worker's environment says.
    await updateQueueSettings(fx.p.root, "bulk", { tenantCap: 5, window: 30 });
    await withEnv({ QUEUE_BULK_TENANT_CAP: "99", QUEUE_BULK_WINDOW: "99" }, seedQueueSettings);
    assert.deepEqual(await bulk(), { cap: 5, window: 30 });
    const view = (await getQueues(fx.p.root)).queues.find((q) => q.name === "bulk")!;
    assert.equal(view.tenantCap, 5);
    assert.equal(view.window, 30);
    assert.equal(view.updatedBy, "root@conveyor.test");
  });

  test("only platform admins change a queue's defaults; bad input names the field; the change is audited", async () => {
    await assert.rejects(updateQueueSettings(fx.p.ada, "bulk", { tenantCap: 2 }), isCode("forbidden"));
    await assert.rejects(updateQueueSettings(fx.p.oscar, "bulk", { tenantCap: 2 }), isCode("forbidden"));
    await assert.rejects(updateQueueSettings(fx.p.root, "nightly", { tenantCap: 2 }), isCode("not_found"));
    const field = (body: unknown, path: string) =>
      assert.rejects(updateQueueSettings(fx.p.root, "bulk", body), (e: unknown) => {
        assert.ok(e instanceof AppError && e.code === "invalid_input", String(e));
        assert.equal(e.fields?.[0]?.path, path);
        return true;
      });
    await field({ tenantCap: -1 }, "tenantCap");
    await field({ tenantCap: 1.5 }, "tenantCap");
    await field({ tenantCap: "3" }, "tenantCap");
    await field({ tenantCap: 100_001 }, "tenantCap");
    await field({ window: 0 }, "window");
    await field({}, "tenantCap");
    await assert.rejects(updateQueueSettings(fx.p.root, "bulk", { tenantCap: 2, extra: 1 }), isCode("invalid_input"));
    assert.deepEqual(await bulk(), { cap: 8, window: 64 }, "nothing refused was written");

    const done = await updateQueueSettings(fx.p.root, "bulk", { window: 50 });
    assert.deepEqual(
      { cap: done.tenantCap, window: done.window, by: done.updatedBy },
      { cap: 8, window: 50, by: "root@conveyor.test" },
      "a field left out keeps its value",
    );
    const [entry] = await db().auditLog.findMany({
      where: { action: "queue.settings" },
      orderBy: { id: "desc" },
      take: 1,
    });
    assert.equal(entry?.actorUserId, fx.p.root.userId);
    assert.equal(entry?.targetType, "queue");
    assert.deepEqual(entry?.targetIds, ["bulk"]);
    assert.deepEqual(entry?.details, {
      queue: "bulk",
      before: { tenantCap: 8, window: 64 },
      after: { tenantCap: 8, window: 50 },
    });
  });

  test("a raised default cap admits waiting work at once", async () => {
    await updateQueueSettings(fx.p.root, "bulk", { tenantCap: 1 });
    const ids = [await probe(fx.p.acmeId), await probe(fx.p.acmeId), await probe(fx.p.acmeId)];
    await admitQueue("bulk");
    const admitted = async () => db().job.count({ where: { id: { in: ids }, admittedAt: { not: null } } });
    assert.equal(await admitted(), 1, "the cap of 1 holds");
    await updateQueueSettings(fx.p.root, "bulk", { tenantCap: 3 });
    assert.equal(await admitted(), 3, "the raise admitted the waiting jobs without a worker's sweep");
  });
});

describe("worker processes", () => {
  function startWorker(args: string[]): ChildProcess & { output: () => string } {
    const child = spawn(process.execPath, workerArgs(...args), {
      env: {
        ...process.env,
        DATABASE_URL: fx.database.url,
        ADMISSION_SWEEP_MS: "200",
        WORKER_SHUTDOWN_GRACE_MS: "2000",
      },
      stdio: ["ignore", "pipe", "pipe", "ipc"],
    });
    let out = "";
    child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
    return Object.assign(child, { output: () => out });
  }
  async function stop(child: ChildProcess) {
    if (child.exitCode !== null) return;
    child.kill("SIGTERM");
    await once(child, "exit");
  }

  test("a cap holds across worker processes, and a pause survives a worker restart", async () => {
    await setTenantLimit(fx.p.root, "bulk", "acme", { maxRunning: 3 });
    const workers = [
      startWorker(["--queues", "bulk", "--concurrency", "4"]),
      startWorker(["--queues", "bulk", "--concurrency", "4"]),
    ];
    try {
      const ids: string[] = [];
      for (let i = 0; i < 24; i++) ids.push(await probe(fx.p.acmeId, 150));
      let peak = 0;
      const deadline = Date.now() + 60_000;
      while (Date.now() < deadline) {
        const { rows } = await pool().query<{ running: number; done: number }>(
          `SELECT count(*) FILTER (WHERE status = 'running')::int AS running,
                  count(*) FILTER (WHERE status = 'succeeded')::int AS done FROM jobs WHERE tenant_id = $1`,
          [fx.p.acmeId],
        );
        peak = Math.max(peak, rows[0]!.running);
        if (rows[0]!.done === ids.length) break;
        await sleep(15);
      }
      assert.equal(await db().job.count({ where: { id: { in: ids }, status: "succeeded" } }), 24);
      assert.ok(peak <= 3, `at most 3 ran at once across both processes (peak ${peak})`);
      assert.equal(peak, 3, "the cap was reached, so the check could fail");
      const workersSeen = await pool().query(`SELECT DISTINCT worker_id FROM job_attempts`);
      assert.equal(workersSeen.rowCount, 2, "both processes took work");

      // A pause is in the database: it holds across a restart of the fleet.
      const pause = await createPause(fx.p.oscar, { queue: "bulk" });
      const held = await probe(fx.p.acmeId);
      await Promise.all(workers.map(stop));
      const restarted = startWorker(["--queues", "bulk", "--concurrency", "2"]);
      workers.push(restarted);
      await sleep(2_500);
      assert.equal((await job(held)).status, "queued", restarted.output());
      await resumePause(fx.p.oscar, pause.id);
      for (let i = 0; i < 250 && (await job(held)).status !== "succeeded"; i++) await sleep(20);
      assert.equal((await job(held)).status, "succeeded", restarted.output());
    } finally {
      await Promise.all(workers.map(stop));
    }
  });

  test("an interactive pool never runs bulk work", async () => {
    const worker = startWorker(["--queues", "interactive", "--concurrency", "2"]);
    try {
      const bulk = await probe(fx.p.acmeId);
      const interactive = (
        await enqueueJob({ tenantId: fx.p.acmeId, type: "probe", input: { sleepMs: 0 }, queue: "interactive" })
      ).job.id;
      for (let i = 0; i < 250 && (await job(interactive)).status !== "succeeded"; i++) await sleep(20);
      assert.equal((await job(interactive)).status, "succeeded", worker.output());
      assert.equal((await job(bulk)).status, "queued");
      assert.match(worker.output(), /queues interactive, concurrency 2/);
    } finally {
      await stop(worker);
    }
  });

  test("a worker given an unknown queue refuses to start", async () => {
    const worker = startWorker(["--queues", "nightly"]);
    const [code] = (await once(worker, "exit")) as [number | null];
    assert.notEqual(code, 0);
    assert.match(worker.output(), /--queues must name some of: interactive, bulk/);
  });
});
