process.env.WEBHOOK_ALLOW_PRIVATE = "1";
/**
 * A member's own history of every kind, through GET /api/v1/jobs (issue 35): a member lists only
 * what they own — what they requested, their schedules' runs, the deliveries to the webhooks they
 * made — of every kind at once; an operator lists the tenant's (their own with `mine=1`); another
 * tenant's never. Filters: kind (several types), status, source (manual | schedule), created range,
 * roots only; a bad one is a 400 naming it.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { POST as exportsRoute } from "@/app/api/v1/exports/route";
import { GET as jobsRoute } from "@/app/api/v1/jobs/route";
import { POST as reportsRoute } from "@/app/api/v1/reports/route";
import { POST as schedulesRoute } from "@/app/api/v1/schedules/route";
import { POST as triggerRoute } from "@/app/api/v1/schedules/[id]/trigger/route";
import { POST as endpointsRoute } from "@/app/api/v1/webhooks/endpoints/route";
import { POST as pingRoute } from "@/app/api/v1/webhooks/endpoints/[id]/test/route";
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

type Listed = { id: string; type: string; parentId: string | null; scheduleId: string | null; createdAt: string };
let tokens: { ada: string; oscar: string; gus: string };
const made = { adaExport: "", adaReport: "", adaRun: "", adaPing: "", oscarExport: "", oscarPing: "" };

/** Every job a caller lists with these filters (paged through). */
async function list(token: string, query = ""): Promise<Listed[]> {
  const out: Listed[] = [];
  let cursor: string | null = null;
  do {
    const q: string = `/api/v1/jobs?limit=100${query ? `&${query}` : ""}${cursor ? `&cursor=${cursor}` : ""}`;
    const r: { status: number; json: Record<string, unknown> } = await call(jobsRoute, token, q);
    assert.equal(r.status, 200, JSON.stringify(r.json));
    out.push(...(r.json.jobs as Listed[]));
    cursor = r.json.nextCursor as string | null;
  } while (cursor);
  return out;
}
const ids = (jobs: Listed[]) => new Set(jobs.map((j) => j.id));

/** Made once, after the database is ready: each person's jobs of each kind. */
async function setup(): Promise<void> {
  tokens = {
    ada: await createApiTokenForEmail("ada@acme.test", "history-ada"),
    oscar: await createApiTokenForEmail("oscar@acme.test", "history-oscar"),
    gus: await createApiTokenForEmail("gus@globex.test", "history-gus"),
  };
  const post = async <P>(route: Route<P>, token: string, path: string, body: unknown, params?: P) => {
    const r = await call(route, token, path, { method: "POST", body: body ?? {}, params });
    assert.ok(r.status < 300, `${path}: ${r.status} ${JSON.stringify(r.json)}`);
    return r.json;
  };
  made.adaExport = String((await post(exportsRoute, tokens.ada, "/api/v1/exports", { dataset: "customers" })).id);
  made.oscarExport = String((await post(exportsRoute, tokens.oscar, "/api/v1/exports", { dataset: "orders" })).id);
  made.adaReport = String(
    (
      await post(reportsRoute, tokens.ada, "/api/v1/reports", {
        from: new Date(Date.now() - 3_600_000).toISOString(),
        to: new Date().toISOString(),
      })
    ).id,
  );
  const schedule = await post(schedulesRoute, tokens.ada, "/api/v1/schedules", {
    name: "history nightly",
    cron: "0 3 * * *",
    task: "export",
    input: { dataset: "customers" },
    paused: true,
  });
  const sid = String(schedule.id);
  made.adaRun = (
    (await post(triggerRoute, tokens.ada, `/api/v1/schedules/${sid}/trigger`, {}, { id: sid })) as { runs: string[] }
  ).runs[0]!;
  // A delivery to an endpoint ada made, and one to oscar's: each owns the deliveries to their own.
  for (const who of ["ada", "oscar"] as const) {
    const ep = (await post(endpointsRoute, tokens[who], "/api/v1/webhooks/endpoints", {
      url: `http://127.0.0.1:9/${who}`,
      events: ["job.failed"],
    })) as { endpoint: { id: string } };
    const epId = ep.endpoint.id;
    const ping = (await post(pingRoute, tokens[who], `/api/v1/webhooks/endpoints/${epId}/test`, {}, { id: epId })) as {
      deliveryId: string;
    };
    const { rows } = await pool().query<{ jobId: string }>(
      `SELECT job_id AS "jobId" FROM webhook_deliveries WHERE id = $1`,
      [ping.deliveryId],
    );
    made[who === "ada" ? "adaPing" : "oscarPing"] = rows[0]!.jobId;
  }
}

useTestDatabase({ setup });

describe("GET /api/v1/jobs: a member's own history", () => {
  test("a member lists what they own with mine=1, of every kind, and nothing else", async () => {
    const mine = await list(tokens.ada, "mine=1");
    const seen = ids(mine);
    for (const id of [made.adaExport, made.adaReport, made.adaRun, made.adaPing]) assert.ok(seen.has(id), id);
    assert.ok(!seen.has(made.oscarExport), "not another member's export");
    assert.ok(!seen.has(made.oscarPing), "not the deliveries to another member's endpoint");
    // Exactly what she created and the deliveries to the endpoints she made, in SQL.
    const { rows } = await pool().query<{ id: string }>(
      `SELECT j.id FROM jobs j JOIN users u ON u.id = j.created_by_id WHERE u.email = 'ada@acme.test'
       UNION
       SELECT j.id FROM jobs j
         JOIN webhook_deliveries d ON d.id = (j.input->>'deliveryId')::uuid AND j.type = 'webhook_delivery'
         JOIN webhook_endpoints e ON e.id = d.endpoint_id
         JOIN users u ON u.id = e.created_by_id WHERE u.email = 'ada@acme.test'`,
    );
    assert.deepEqual(seen, new Set(rows.map((r) => r.id)), "what she created, and the deliveries to her endpoints");
    assert.equal(mine.length, seen.size, "each once");
    assert.deepEqual(
      mine.map((j) => j.id),
      [...mine].sort((a, b) => b.createdAt.localeCompare(a.createdAt) || b.id.localeCompare(a.id)).map((j) => j.id),
      "newest first",
    );
    // Without mine=1 a member sees the tenant's jobs, as DESIGN.md has it ("members see their tenant's jobs").
    const tenant = ids(await list(tokens.ada));
    for (const id of seen) assert.ok(tenant.has(id), id);
    assert.ok(tenant.has(made.oscarExport), "the tenant's list holds another member's export");
  });

  test("an operator lists the tenant's, and their own with mine=1; another tenant lists none of it", async () => {
    const tenant = ids(await list(tokens.oscar));
    for (const id of Object.values(made)) assert.ok(tenant.has(id), id);
    const own = ids(await list(tokens.oscar, "mine=1"));
    assert.ok(own.has(made.oscarExport) && own.has(made.oscarPing));
    assert.ok(!own.has(made.adaExport) && !own.has(made.adaPing));
    const gus = ids(await list(tokens.gus));
    for (const id of Object.values(made)) assert.ok(!gus.has(id), `Globex never lists ${id}`);
  });

  test("filters: kind (its types), status, source, created range, roots", async () => {
    const exportsAndReports = await list(tokens.ada, "type=export,job_report");
    assert.ok(exportsAndReports.every((j) => j.type === "export" || j.type === "job_report"));
    assert.ok(ids(exportsAndReports).has(made.adaExport) && ids(exportsAndReports).has(made.adaReport));
    assert.ok(!ids(exportsAndReports).has(made.adaPing));

    const runs = await list(tokens.ada, "source=schedule");
    assert.deepEqual([...ids(runs)], [made.adaRun], "only the schedule's run");
    const manual = ids(await list(tokens.ada, "source=manual"));
    assert.ok(manual.has(made.adaExport) && !manual.has(made.adaRun));

    const queued = await list(tokens.ada, "status=queued");
    const statuses = await pool().query<{ id: string }>(
      `SELECT id FROM jobs WHERE id = ANY($1::uuid[]) AND status = 'queued'`,
      [[...ids(await list(tokens.ada))]],
    );
    assert.deepEqual(ids(queued), new Set(statuses.rows.map((r) => r.id)));

    const future = new Date(Date.now() + 3_600_000).toISOString();
    assert.equal((await list(tokens.ada, `from=${encodeURIComponent(future)}`)).length, 0);
    const hourAgo = new Date(Date.now() - 3_600_000).toISOString();
    const recent = ids(await list(tokens.ada, `from=${encodeURIComponent(hourAgo)}&to=${encodeURIComponent(future)}`));
    assert.ok(recent.has(made.adaExport) && recent.has(made.adaRun));
    assert.equal((await list(tokens.ada, `to=${encodeURIComponent(hourAgo)}&type=job_report`)).length, 0);

    // A part of a split export is ada's too, but roots=1 leaves it out.
    await pool().query(
      `INSERT INTO jobs (id, tenant_id, type, queue, status, input, input_hash, parent_id, child_index, created_by_id, updated_at)
       SELECT gen_random_uuid(), tenant_id, 'export_part', 'bulk', 'cancelled', '{}', 'part', id, 0, created_by_id, now()
         FROM jobs WHERE id = $1`,
      [made.adaExport],
    );
    const all = await list(tokens.ada);
    assert.ok(all.some((j) => j.parentId === made.adaExport));
    assert.ok((await list(tokens.ada, "roots=1")).every((j) => j.parentId === null));
  });

  test("a bad filter is a 400 naming it", async () => {
    for (const [query, field] of [
      ["source=cron", "source"],
      ["from=yesterday", "from"],
      [`from=${encodeURIComponent(new Date().toISOString())}&to=${encodeURIComponent("2020-01-01T00:00:00Z")}`, "to"],
      ["roots=yes", "roots"],
      ["mine=2", "mine"],
      ["type=export,,import", "type"],
    ]) {
      const r = await call(jobsRoute, tokens.ada, `/api/v1/jobs?${query}`);
      assert.equal(r.status, 400, query);
      const fields = ((r.json.error as { fields?: { path: string }[] }).fields ?? []).map((f) => f.path);
      assert.deepEqual(fields, [field], query);
    }
  });
});
