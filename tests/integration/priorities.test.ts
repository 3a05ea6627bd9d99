/**
 * Caller priorities (issue 35), through the public API: `priority` on the creates of exports,
 * imports, reports and schedules; `high` refused (400 naming `priority`) until an operator raises
 * the tenant's maximum (PUT /api/v1/ops/tenants/{tenant}/priority, audited; members 403, another
 * tenant 404); the priority on the job's wire shape, in lists and on a schedule's runs. And what
 * it does in admission: a tenant's high job starts before its normal ones, while another tenant's
 * turns are exactly those it has when nobody asks for high.
 */
import { beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { runOnce } from "graphile-worker";
import { POST as exportsRoute } from "@/app/api/v1/exports/route";
import { POST as importsRoute } from "@/app/api/v1/imports/route";
import { GET as jobRoute } from "@/app/api/v1/jobs/[id]/route";
import { GET as jobsRoute } from "@/app/api/v1/jobs/route";
import { GET as readPriorityRoute, PUT as priorityRoute } from "@/app/api/v1/ops/tenants/[tenant]/priority/route";
import { POST as reportsRoute } from "@/app/api/v1/reports/route";
import { POST as schedulesRoute } from "@/app/api/v1/schedules/route";
import { POST as triggerRoute } from "@/app/api/v1/schedules/[id]/trigger/route";
import { admitAll } from "@/lib/admission/admitter";
import { createPause, resumePause } from "@/lib/admission/pauses";
import { setTenantLimit } from "@/lib/admission/queues";
import { createApiTokenForEmail } from "@/lib/auth/tokens";
import { pool } from "@/lib/db";
import { databaseUrl } from "@/lib/env";
import { enqueueJob } from "@/lib/jobs/enqueue";
import { priorityValue, type PriorityName } from "@/lib/jobs/priority";
import { useTestDatabase } from "../helpers/db";
import { quietLogger } from "../helpers/fixtures";
import { taskListFor } from "../../worker/task-list";

const fx = useTestDatabase();

type Route<P> = (req: Request, ctx: { params: Promise<P> }) => Promise<Response>;
async function call<P>(
  route: Route<P>,
  token: string,
  path: string,
  { method = "GET", body, params }: { method?: string; body?: unknown; params?: P } = {},
): Promise<{ status: number; json: Record<string, unknown> & { error?: { fields?: { path: string }[] } } }> {
  const res = await route(
    new Request(`http://test${path}`, {
      method,
      headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    }),
    { params: Promise.resolve((params ?? {}) as P) },
  );
  return { status: res.status, json: res.status === 204 ? {} : ((await res.json()) as never) };
}

const fieldsOf = (r: { json: { error?: { fields?: { path: string }[] } } }) =>
  (r.json.error?.fields ?? []).map((f) => f.path);

describe("priority on create, bounded by the tenant's maximum", () => {
  test("high is refused until an operator allows it; the priority shows on the job, in lists and on schedule runs", async () => {
    const ada = await createApiTokenForEmail("ada@acme.test", "prio-ada");
    const oscar = await createApiTokenForEmail("oscar@acme.test", "prio-oscar");
    const acme = { tenant: "acme" };

    // Unknown names and high above the maximum: 400 naming priority, on every create.
    for (const priority of ["urgent", 1, "high"]) {
      const r = await call(exportsRoute, ada, "/api/v1/exports", {
        method: "POST",
        body: { dataset: "customers", priority },
      });
      assert.equal(r.status, 400, `priority ${String(priority)}`);
      assert.deepEqual(fieldsOf(r), ["priority"]);
    }
    const highReport = await call(reportsRoute, ada, "/api/v1/reports", {
      method: "POST",
      body: { from: new Date(Date.now() - 3_600_000).toISOString(), to: new Date().toISOString(), priority: "high" },
    });
    assert.equal(highReport.status, 400);
    assert.deepEqual(fieldsOf(highReport), ["priority"]);
    assert.match(String((highReport.json.error as { message?: string }).message), /maximum priority \(normal\)/);
    const highImport = await call(importsRoute, ada, "/api/v1/imports", {
      method: "POST",
      body: { uploadId: "nope", dataset: "customers", priority: "high" },
    });
    assert.equal(highImport.status, 400, "the import's priority is checked before its upload");
    assert.deepEqual(fieldsOf(highImport), ["priority"]);
    const badSchedule = await call(schedulesRoute, ada, "/api/v1/schedules", {
      method: "POST",
      body: { name: "prio bad", cron: "0 3 * * *", task: "export", input: { dataset: "customers" }, priority: "top" },
    });
    assert.equal(badSchedule.status, 400);
    assert.deepEqual(fieldsOf(badSchedule), ["priority"]);

    // Low and normal need nothing.
    const low = await call(exportsRoute, ada, "/api/v1/exports", {
      method: "POST",
      body: { dataset: "customers", priority: "low" },
    });
    assert.equal(low.status, 202);
    assert.equal(low.json.priority, "low");
    const plain = await call(exportsRoute, ada, "/api/v1/exports", { method: "POST", body: { dataset: "orders" } });
    assert.equal(plain.json.priority, "normal");

    // Only an operator of the tenant (or a platform admin) sets the maximum.
    const byMember = await call(priorityRoute, ada, "/api/v1/ops/tenants/acme/priority", {
      method: "PUT",
      body: { maxPriority: "high" },
      params: acme,
    });
    assert.equal(byMember.status, 403);
    const otherTenant = await call(priorityRoute, oscar, "/api/v1/ops/tenants/globex/priority", {
      method: "PUT",
      body: { maxPriority: "high" },
      params: { tenant: "globex" },
    });
    assert.equal(otherTenant.status, 404);
    const badMax = await call(priorityRoute, oscar, "/api/v1/ops/tenants/acme/priority", {
      method: "PUT",
      body: { maxPriority: "highest" },
      params: acme,
    });
    assert.equal(badMax.status, 400);
    assert.deepEqual(fieldsOf(badMax), ["maxPriority"]);
    const raised = await call(priorityRoute, oscar, "/api/v1/ops/tenants/acme/priority", {
      method: "PUT",
      body: { maxPriority: "high" },
      params: acme,
    });
    assert.equal(raised.status, 200);
    assert.deepEqual(raised.json.allowed, ["low", "normal", "high"]);
    const audit = await pool().query<{ details: { from: string; to: string } }>(
      `SELECT details FROM audit_logs WHERE action = 'tenant.max_priority' AND tenant_id = $1`,
      [fx.p.acmeId],
    );
    assert.deepEqual(
      audit.rows.map((r) => r.details),
      [{ from: "normal", to: "high" }],
    );
    const read = await call(readPriorityRoute, ada, "/api/v1/ops/tenants/acme/priority", { params: acme });
    assert.equal(read.status, 200, "a member reads their own tenant's maximum (the create form's choices)");
    assert.equal(read.json.maxPriority, "high");
    const readOther = await call(readPriorityRoute, ada, "/api/v1/ops/tenants/globex/priority", {
      params: { tenant: "globex" },
    });
    assert.equal(readOther.status, 404);

    // Now high is taken, stored on the scale admission orders by, and shown.
    const high = await call(exportsRoute, ada, "/api/v1/exports", {
      method: "POST",
      body: { dataset: "customers", priority: "high" },
    });
    assert.equal(high.status, 202);
    assert.equal(high.json.priority, "high");
    const stored = await pool().query<{ priority: number }>(`SELECT priority FROM jobs WHERE id = $1`, [high.json.id]);
    assert.equal(stored.rows[0]!.priority, priorityValue("high"));
    const one = await call(jobRoute, ada, `/api/v1/jobs/${String(high.json.id)}`, {
      params: { id: String(high.json.id) },
    });
    assert.equal(one.json.priority, "high");
    const list = await call(jobsRoute, ada, "/api/v1/jobs?type=export&limit=100");
    const listed = new Map((list.json.jobs as { id: string; priority: string }[]).map((j) => [j.id, j.priority]));
    assert.equal(listed.get(String(high.json.id)), "high");
    assert.equal(listed.get(String(low.json.id)), "low");
    assert.equal(listed.get(String(plain.json.id)), "normal");
    const report = await call(reportsRoute, ada, "/api/v1/reports", {
      method: "POST",
      body: { from: new Date(Date.now() - 3_600_000).toISOString(), to: new Date().toISOString(), priority: "high" },
    });
    assert.equal(report.status, 202);
    assert.equal(report.json.priority, "high");

    // A schedule keeps its priority and its runs carry it.
    const schedule = await call(schedulesRoute, ada, "/api/v1/schedules", {
      method: "POST",
      body: {
        name: "prio nightly",
        cron: "0 3 * * *",
        task: "export",
        input: { dataset: "customers" },
        paused: true,
        priority: "high",
      },
    });
    assert.equal(schedule.status, 201);
    assert.equal(schedule.json.priority, "high");
    const runs = await call(triggerRoute, ada, `/api/v1/schedules/${String(schedule.json.id)}/trigger`, {
      method: "POST",
      params: { id: String(schedule.json.id) },
    });
    assert.equal(runs.status, 202);
    const runIds = (runs.json as { runs: string[] }).runs;
    assert.equal(runIds.length, 1);
    const run = await call(jobRoute, ada, `/api/v1/jobs/${runIds[0]}`, { params: { id: runIds[0]! } });
    assert.equal(run.json.priority, "high");

    // Lowered again: high is refused again; what waits keeps its priority.
    await call(priorityRoute, oscar, "/api/v1/ops/tenants/acme/priority", {
      method: "PUT",
      body: { maxPriority: "normal" },
      params: acme,
    });
    const again = await call(exportsRoute, ada, "/api/v1/exports", {
      method: "POST",
      body: { dataset: "customers", priority: "high" },
    });
    assert.equal(again.status, 400);
  });
});

describe("what a priority does in admission", () => {
  beforeEach(async () => {
    await pool().query(`DELETE FROM graphile_worker._private_jobs`);
    await pool().query(`DELETE FROM jobs`);
    await pool().query(`DELETE FROM queue_pauses`);
    await pool().query(`DELETE FROM tenant_queue_limits`);
    await pool().query(`DELETE FROM admission_state`);
    await pool().query(`UPDATE queues SET vclock = 0, saturated = false`);
  });

  const probe = async (tenantId: string, priority: PriorityName) =>
    (await enqueueJob({ tenantId, type: "probe", input: { sleepMs: 0 }, priority: priorityValue(priority) })).job.id;

  /** Runs every job one at a time (graphile's order), admitting after each batch; the ids in the order they started. */
  async function runInOrder(ids: string[]): Promise<string[]> {
    do {
      await runOnce({ connectionString: databaseUrl(), taskList: taskListFor(), concurrency: 1, logger: quietLogger });
    } while ((await admitAll()) > 0);
    const { rows } = await pool().query<{ jobId: string }>(
      `SELECT job_id AS "jobId" FROM job_attempts WHERE job_id = ANY($1::uuid[]) ORDER BY started_at, id`,
      [ids],
    );
    return rows.map((r) => r.jobId);
  }

  /**
   * Acme queues four normal jobs, then (maybe) two high ones; Globex three normal ones; all held by a
   * pause, then released at once into a window of 4 with a cap of 2 per tenant.
   */
  async function scenario(acmeHigh: boolean) {
    await pool().query(`UPDATE queues SET max_admitted = 4 WHERE name = 'bulk'`);
    await setTenantLimit(fx.p.root, "bulk", "acme", { maxRunning: 2 });
    await setTenantLimit(fx.p.root, "bulk", "globex", { maxRunning: 2 });
    const pause = await createPause(fx.p.root, { queue: "bulk" });
    const normal: string[] = [];
    for (let i = 0; i < 4; i++) normal.push(await probe(fx.p.acmeId, "normal"));
    const high: string[] = [];
    for (let i = 0; i < 2; i++) high.push(await probe(fx.p.acmeId, acmeHigh ? "high" : "normal"));
    const globex: string[] = [];
    for (let i = 0; i < 3; i++) globex.push(await probe(fx.p.globexId, "normal"));
    await resumePause(fx.p.root, pause.id);
    const order = await runInOrder([...normal, ...high, ...globex]);
    assert.equal(order.length, 9);
    return {
      acmeOrder: order.filter((id) => !globex.includes(id)),
      globexPositions: globex.map((id) => order.indexOf(id)),
      normal,
      high,
    };
  }

  test("a tenant's high jobs start before its normal ones; the other tenant's turns are what they are without them", async () => {
    const baseline = await scenario(false);
    assert.deepEqual(
      baseline.acmeOrder,
      [...baseline.normal, ...baseline.high],
      "all normal: first come, first served",
    );
    await pool().query(`DELETE FROM jobs`);
    await pool().query(`DELETE FROM admission_state`);
    await pool().query(`UPDATE queues SET vclock = 0, saturated = false`);

    const withHigh = await scenario(true);
    assert.deepEqual(
      withHigh.acmeOrder,
      [...withHigh.high, ...withHigh.normal],
      "queued after the normal jobs, the high ones start first",
    );
    assert.deepEqual(
      withHigh.globexPositions,
      baseline.globexPositions,
      "Globex starts at the same places: Acme's high jobs take Acme's turns, not Globex's",
    );
    // And those places are a fair rotation: one of Globex's jobs in every two starts while both wait.
    withHigh.globexPositions.forEach((p, k) => assert.ok(p === 2 * k || p === 2 * k + 1, `Globex's job ${k} at ${p}`));
  });
});
