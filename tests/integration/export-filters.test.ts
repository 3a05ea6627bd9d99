/**
 * The exports page's filters through GET /api/v1/jobs (issue 38): one schedule's runs
 * (`schedule`), an input field's value (`input=dataset:customers`), with status and source; each
 * tenant-scoped, and a bad value a 400 naming its field.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { POST as exportsRoute } from "@/app/api/v1/exports/route";
import { GET as jobsRoute } from "@/app/api/v1/jobs/route";
import { POST as schedulesRoute } from "@/app/api/v1/schedules/route";
import { POST as triggerRoute } from "@/app/api/v1/schedules/[id]/trigger/route";
import { createApiTokenForEmail } from "@/lib/auth/tokens";
import { pool } from "@/lib/db";
import { useTestDatabase } from "../helpers/db";

type Route<P> = (req: Request, ctx: { params: Promise<P> }) => Promise<Response>;
async function call<P>(
  route: Route<P>,
  token: string,
  path: string,
  { method = "GET", body, params }: { method?: string; body?: unknown; params?: P } = {},
): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await route(
    new Request(`http://test${path}`, {
      method,
      headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    }),
    { params: Promise.resolve((params ?? {}) as P) },
  );
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

type Listed = { id: string; tenantId: string; scheduleId: string | null; input: { dataset?: string } };
let tokens: { ada: string; gus: string };
const made = { nightly: "", weekly: "", nightlyRun: "", weeklyRun: "", adaOrders: "", adaCustomers: "", gusRun: "" };

async function list(token: string, query: string): Promise<Listed[]> {
  const r = await call(jobsRoute, token, `/api/v1/jobs?limit=100&type=export&${query}`);
  assert.equal(r.status, 200, JSON.stringify(r.json));
  return r.json.jobs as Listed[];
}

async function setup(): Promise<void> {
  tokens = {
    ada: await createApiTokenForEmail("ada@acme.test", "filters-ada"),
    gus: await createApiTokenForEmail("gus@globex.test", "filters-gus"),
  };
  const post = async <P>(route: Route<P>, token: string, path: string, body: unknown, params?: P) => {
    const r = await call(route, token, path, { method: "POST", body, params });
    assert.ok(r.status < 300, `${path}: ${r.status} ${JSON.stringify(r.json)}`);
    return r.json;
  };
  const schedule = async (token: string, name: string, dataset: string) => {
    const s = await post(schedulesRoute, token, "/api/v1/schedules", {
      name,
      cron: "0 3 * * *",
      task: "export",
      input: { dataset },
      paused: true,
    });
    const id = String(s.id);
    const run = (await post(triggerRoute, token, `/api/v1/schedules/${id}/trigger`, {}, { id })) as { runs: string[] };
    return { id, run: run.runs[0]! };
  };
  const nightly = await schedule(tokens.ada, "filters nightly", "customers");
  const weekly = await schedule(tokens.ada, "filters weekly", "orders");
  const gus = await schedule(tokens.gus, "filters globex", "customers");
  Object.assign(made, { nightly: nightly.id, nightlyRun: nightly.run, weekly: weekly.id, weeklyRun: weekly.run });
  made.gusRun = gus.run;
  made.adaOrders = String((await post(exportsRoute, tokens.ada, "/api/v1/exports", { dataset: "orders" })).id);
  made.adaCustomers = String((await post(exportsRoute, tokens.ada, "/api/v1/exports", { dataset: "customers" })).id);
}

useTestDatabase({ setup });

describe("GET /api/v1/jobs: the exports page's filters", () => {
  test("schedule=<id> lists that schedule's runs only, of the caller's tenant", async () => {
    const runs = await list(tokens.ada, `schedule=${made.nightly}`);
    assert.deepEqual(
      runs.map((j) => j.id),
      [made.nightlyRun],
    );
    assert.ok(runs.every((j) => j.scheduleId === made.nightly));
    // Another tenant's schedule id finds nothing of it (the list is the caller's tenant's).
    const { rows } = await pool().query<{ id: string }>(
      `SELECT r.schedule_id AS id FROM schedule_runs r WHERE r.job_id = $1`,
      [made.gusRun],
    );
    assert.deepEqual(await list(tokens.ada, `schedule=${rows[0]!.id}`), []);
  });

  test("input=dataset:… lists the exports of that dataset, with source and status", async () => {
    const customers = await list(tokens.ada, "input=dataset:customers");
    const ids = new Set(customers.map((j) => j.id));
    assert.ok(ids.has(made.adaCustomers) && ids.has(made.nightlyRun));
    assert.ok(!ids.has(made.adaOrders) && !ids.has(made.weeklyRun) && !ids.has(made.gusRun));
    assert.ok(customers.every((j) => j.input.dataset === "customers"));
    // What SQL says of the tenant's customers exports.
    const { rows } = await pool().query<{ n: string }>(
      `SELECT count(*) AS n FROM jobs j JOIN tenants t ON t.id = j.tenant_id
        WHERE t.slug = 'acme' AND j.type = 'export' AND j.input->>'dataset' = 'customers'`,
    );
    assert.equal(customers.length, Number(rows[0]!.n));
    const manual = await list(tokens.ada, "input=dataset:customers&source=manual");
    assert.ok(manual.some((j) => j.id === made.adaCustomers));
    assert.ok(manual.every((j) => j.scheduleId === null && j.id !== made.nightlyRun));
    assert.deepEqual(await list(tokens.ada, "input=dataset:customers&status=failed&source=schedule"), []);
  });

  test("a bad filter is a 400 naming its field", async () => {
    for (const [query, field] of [
      ["schedule=nightly", "schedule"],
      ["input=dataset", "input"],
      ["input=1x:customers", "input"],
      ["status=broken", "status"],
      ["source=token", "source"],
    ] as const) {
      const r = await call(jobsRoute, tokens.ada, `/api/v1/jobs?${query}`);
      assert.equal(r.status, 400, query);
      const fields = (r.json.error as { fields: { path: string }[] }).fields.map((f) => f.path);
      assert.deepEqual(fields, [field], query);
    }
  });
});
