import { afterEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { POST as backfillRoute } from "@/app/api/v1/schedules/[id]/backfill/route";
import { GET as eventsRoute } from "@/app/api/v1/schedules/[id]/events/route";
import { GET as scheduleRoute } from "@/app/api/v1/schedules/[id]/route";
import { POST as triggerRoute } from "@/app/api/v1/schedules/[id]/trigger/route";
import { POST as createScheduleRoute } from "@/app/api/v1/schedules/route";
import { createApiTokenForEmail } from "@/lib/auth/tokens";
import { pool } from "@/lib/db";
import { resetEnvCache } from "@/lib/env";
import { schedulerTick } from "@/lib/schedules/scheduler";
import { createSchedule, deleteSchedule } from "@/lib/schedules/service";
import { useTestDatabase } from "../helpers/db";

const fx = useTestDatabase({ seed: 0.001 });

const orders = { dataset: "orders", format: "csv" };
let n = 0;
const name = (what: string) => `${what} ${++n}`;

function withEnv(vars: Record<string, string>): void {
  Object.assign(process.env, vars);
  resetEnvCache();
}
afterEach(async () => {
  delete process.env.QUOTA_SCHEDULES_PER_TENANT;
  process.env.SCHEDULE_MIN_INTERVAL_SECONDS = "1";
  resetEnvCache();
  await pool().query(
    "UPDATE tenants SET quota_jobs_per_user = NULL, quota_jobs_per_tenant = NULL, quota_export_bytes = NULL",
  );
  await pool().query("DELETE FROM schedules");
});

type Json = Record<string, unknown>;
async function call(
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any route handler: its params are given below
  route: (req: Request, ctx: { params: Promise<any> }) => Promise<Response>,
  token: string,
  url: string,
  init: { method?: string; body?: unknown; params?: Record<string, string> } = {},
): Promise<{ status: number; body: Json }> {
  const res = await route(
    new Request(`http://test${url}`, {
      method: init.method ?? "GET",
      headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
      ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
    }),
    { params: Promise.resolve(init.params ?? {}) },
  );
  return { status: res.status, body: (await res.json()) as Json };
}
const fieldOf = (body: Json, path: string) =>
  (body.error as { fields?: { path: string; message: string }[] }).fields?.find((f) => f.path === path);

async function runsOf(id: string): Promise<number> {
  const { rows } = await pool().query<{ n: number }>(
    "SELECT count(*)::int AS n FROM schedule_runs WHERE schedule_id = $1",
    [id],
  );
  return rows[0]!.n;
}
/** The schedule's quota_skipped events over the API: the quota each names. */
async function quotaEvents(token: string, id: string): Promise<string[]> {
  const r = await call(eventsRoute, token, `/api/v1/schedules/${id}/events`, { params: { id } });
  assert.equal(r.status, 200);
  return (r.body.events as { kind: string; quota: string | null }[])
    .filter((e) => e.kind === "quota_skipped")
    .map((e) => e.quota ?? "(none)");
}
/** Room for `room` more unfinished jobs of Ada's (the quota counts those she has, whatever made them). */
async function setAdaQuota(room: number): Promise<void> {
  const { rows } = await pool().query<{ n: number }>(
    "SELECT coalesce(sum(open), 0)::int AS n FROM open_job_counts WHERE tenant_id = $1 AND user_id = $2",
    [fx.p.acmeId, fx.p.ada.userId],
  );
  await pool().query("UPDATE tenants SET quota_jobs_per_user = $2 WHERE id = $1", [fx.p.acmeId, rows[0]!.n + room]);
}

describe("what the API may schedule", () => {
  test("the probe is refused through the API (400 naming task), and offered nowhere; code in-process still makes it", async () => {
    const token = await createApiTokenForEmail("ada@acme.test", "quotas");
    const r = await call(createScheduleRoute, token, "/api/v1/schedules", {
      method: "POST",
      body: { name: name("probe"), cron: "0 0 * * *", task: "probe", input: {} },
    });
    assert.equal(r.status, 400);
    const field = fieldOf(r.body, "task");
    assert.ok(field, JSON.stringify(r.body));
    assert.match(field.message, /must be one of export$/);
    const made = await createSchedule(
      fx.p.ada,
      { name: name("probe"), cron: "0 0 * * *", task: "probe", input: {} },
      { internal: true },
    );
    assert.equal(made.task, "probe");
  });

  test("a cron closer than SCHEDULE_MIN_INTERVAL_SECONDS is a 400 naming cron, on create and on edit", async () => {
    withEnv({ SCHEDULE_MIN_INTERVAL_SECONDS: "60" });
    const token = await createApiTokenForEmail("ada@acme.test", "quotas");
    const post = (cron: string) =>
      call(createScheduleRoute, token, "/api/v1/schedules", {
        method: "POST",
        body: { name: name("interval"), cron, task: "export", input: orders },
      });
    for (const cron of ["* * * * * *", "*/30 * * * * *", "0,1 0 0 * * *"]) {
      const r = await post(cron);
      assert.equal(r.status, 400, cron);
      assert.match(fieldOf(r.body, "cron")?.message ?? "", /at most once every 60 s/, cron);
    }
    assert.equal((await post("0 * * * * *")).status, 201, "a 6-field cron a minute apart is fine");
    assert.equal((await post("*/5 * * * *")).status, 201);
    const s = await createSchedule(fx.p.ada, { name: name("edit"), cron: "0 * * * *", task: "export", input: orders });
    const { PATCH } = await import("@/app/api/v1/schedules/[id]/route");
    const r = await call(PATCH, token, `/api/v1/schedules/${s.id}`, {
      method: "PATCH",
      body: { cron: "*/10 * * * * *" },
      params: { id: s.id },
    });
    assert.equal(r.status, 400);
    assert.ok(fieldOf(r.body, "cron"));
  });

  test("a tenant has at most QUOTA_SCHEDULES_PER_TENANT schedules: 429 quota_exceeded, also when created at once", async () => {
    withEnv({ QUOTA_SCHEDULES_PER_TENANT: "3" });
    const token = await createApiTokenForEmail("ada@acme.test", "quotas");
    const results = await Promise.all(
      Array.from({ length: 6 }, () =>
        call(createScheduleRoute, token, "/api/v1/schedules", {
          method: "POST",
          body: { name: name("cap"), cron: "0 0 * * *", task: "export", input: orders },
        }),
      ),
    );
    assert.deepEqual(results.map((r) => r.status).sort(), [201, 201, 201, 429, 429, 429]);
    const refused = results.find((r) => r.status === 429)!.body.error as { code: string; details: Json };
    assert.equal(refused.code, "quota_exceeded");
    assert.deepEqual(refused.details, { quota: "schedules_per_tenant", limit: 3, used: 3 });
    const { rows } = await pool().query<{ n: number }>(
      "SELECT count(*)::int AS n FROM schedules WHERE tenant_id = $1",
      [fx.p.acmeId],
    );
    assert.equal(rows[0]!.n, 3);
    // Another tenant's cap is its own.
    await createSchedule(fx.p.gus, { name: name("cap"), cron: "0 0 * * *", task: "export", input: orders });
  });
});

describe("a schedule's runs pass the quotas of its owner and tenant", () => {
  test("the scheduler: a run the owner's quota refuses is not made, but a quota_skipped event (shown by the API)", async () => {
    const token = await createApiTokenForEmail("ada@acme.test", "quotas");
    await setAdaQuota(1);
    const s = await createSchedule(fx.p.ada, {
      name: name("due"),
      cron: "0 0 * * *",
      task: "export",
      input: orders,
      overlapPolicy: "allow",
      missedRunPolicy: "all",
      catchupWindowSeconds: 3 * 86_400,
    });
    // Three missed midnights, caught up in one tick: one fits the owner's quota of one.
    await pool().query(
      "UPDATE schedules SET next_run_at = date_trunc('day', now()) - interval '2 days' WHERE id = $1",
      [s.id],
    );
    const tick = await schedulerTick();
    assert.equal(tick.quotaSkipped, 2);
    assert.equal(await runsOf(s.id), 1);
    assert.deepEqual(await quotaEvents(token, s.id), ["jobs_per_user", "jobs_per_user"]);
    const got = await call(scheduleRoute, token, `/api/v1/schedules/${s.id}`, { params: { id: s.id } });
    assert.equal(got.body.quotaSkippedCount, 2);
  });

  test("the scheduler: a scheduled export passes the tenant's export_bytes quota", async () => {
    const token = await createApiTokenForEmail("ada@acme.test", "quotas");
    await setAdaQuota(100);
    await pool().query("UPDATE tenants SET quota_export_bytes = 0 WHERE id = $1", [fx.p.acmeId]);
    const s = await createSchedule(fx.p.ada, { name: name("bytes"), cron: "0 0 * * *", task: "export", input: orders });
    await pool().query("UPDATE schedules SET next_run_at = now() - interval '1 second' WHERE id = $1", [s.id]);
    await schedulerTick();
    assert.equal(await runsOf(s.id), 0);
    assert.deepEqual(await quotaEvents(token, s.id), ["export_bytes"]);
  });

  test("backfill (up to 1,000 runs a request) makes the runs the owner's quota allows; the rest are quota_skipped", async () => {
    const token = await createApiTokenForEmail("ada@acme.test", "quotas");
    await setAdaQuota(2);
    const s = await createSchedule(fx.p.ada, {
      name: name("backfill"),
      cron: "0 * * * *",
      task: "export",
      input: orders,
      paused: true,
    });
    const r = await call(backfillRoute, token, `/api/v1/schedules/${s.id}/backfill`, {
      method: "POST",
      body: { from: "2026-01-01T00:00:00Z", to: "2026-01-01T04:00:00Z" },
      params: { id: s.id },
    });
    assert.equal(r.status, 202);
    assert.equal(r.body.occurrences, 5);
    assert.equal((r.body.runs as string[]).length, 2);
    assert.equal(r.body.quotaSkipped, 3);
    assert.equal(await runsOf(s.id), 2);
    assert.equal((await quotaEvents(token, s.id)).length, 3);
  });

  test("trigger checks the schedule's owner, not the caller, atomically: concurrent triggers make no more than the quota", async () => {
    const oscarToken = await createApiTokenForEmail("oscar@acme.test", "quotas");
    await setAdaQuota(2);
    const s = await createSchedule(fx.p.ada, {
      name: name("trigger"),
      cron: "0 0 1 1 *",
      task: "export",
      input: orders,
      paused: true,
    });
    // Oscar has no open job; Ada, the owner, may have two.
    const results = await Promise.all(
      Array.from({ length: 6 }, () =>
        call(triggerRoute, oscarToken, `/api/v1/schedules/${s.id}/trigger`, { method: "POST", params: { id: s.id } }),
      ),
    );
    assert.equal(await runsOf(s.id), 2);
    // The rest were refused, each a quota_skipped event (a trigger at the very millisecond of another's
    // run is that run's occurrence: 202 with no run of its own).
    const refused = results.filter((r) => r.status === 429);
    assert.ok(refused.length >= 1, JSON.stringify(results.map((r) => r.status)));
    for (const r of results) assert.ok(r.status === 429 || r.status === 202, String(r.status));
    const error = refused[0]!.body.error as { code: string; message: string; details: Json };
    assert.equal(error.code, "quota_exceeded");
    assert.equal(error.details.quota, "jobs_per_user");
    assert.match(error.message, /its owner's quota/);
    assert.equal((await quotaEvents(oscarToken, s.id)).length, refused.length);
    await deleteSchedule(fx.p.ada, s.id);
  });

  test("the tenant's quota holds across its members' schedules", async () => {
    const token = await createApiTokenForEmail("ada@acme.test", "quotas");
    const { rows } = await pool().query<{ n: number }>(
      `SELECT coalesce(sum(open), 0)::int AS n FROM open_job_counts
        WHERE tenant_id = $1 AND user_id = '00000000-0000-0000-0000-000000000000'`,
      [fx.p.acmeId],
    );
    await pool().query("UPDATE tenants SET quota_jobs_per_tenant = $2 WHERE id = $1", [fx.p.acmeId, rows[0]!.n + 1]);
    const a = await createSchedule(fx.p.ada, { name: name("t"), cron: "0 0 * * *", task: "export", input: orders });
    const o = await createSchedule(fx.p.oscar, { name: name("t"), cron: "0 0 * * *", task: "export", input: orders });
    await pool().query("UPDATE schedules SET next_run_at = now() - interval '1 second' WHERE id = ANY($1::uuid[])", [
      [a.id, o.id],
    ]);
    await schedulerTick();
    assert.equal((await runsOf(a.id)) + (await runsOf(o.id)), 1);
    const events = [...(await quotaEvents(token, a.id)), ...(await quotaEvents(token, o.id))];
    assert.deepEqual(events, ["jobs_per_tenant"]);
  });
});
