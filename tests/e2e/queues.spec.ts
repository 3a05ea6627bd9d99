import type { APIRequestContext } from "@playwright/test";
import { expect, test } from "./fixtures";
import { cliToken, confirmDialog, expectAccessible, sql, storageStateFor } from "./helpers";

// One at a time: these tests pause queues the other specs' jobs run on.
test.describe.configure({ mode: "serial" });

const tokens: Record<string, APIRequestContext> = {};
const who = ["ada@acme.test", "oscar@acme.test", "gina@globex.test", "root@conveyor.test"] as const;

test.beforeAll(async ({ playwright }) => {
  const baseURL = test.info().project.use.baseURL;
  for (const email of who) {
    tokens[email] = await playwright.request.newContext({
      baseURL,
      extraHTTPHeaders: { Authorization: `Bearer ${cliToken(email)}` },
    });
  }
  tokens.anonymous = await playwright.request.newContext({ baseURL });
});
test.afterAll(async () => {
  for (const ctx of Object.values(tokens)) await ctx.dispose();
  // Never leave a pause behind for the other specs.
  await sql("UPDATE queue_pauses SET resumed_at = now() WHERE resumed_at IS NULL");
});

test("the admission API answers each caller as it should", async () => {
  const [acme] = await sql<{ id: string }>("SELECT id FROM tenants WHERE slug = 'acme'");
  const status = async (as: string, method: "get" | "post" | "delete" | "put", url: string, data?: unknown) =>
    (await tokens[as]![method](url, data === undefined ? {} : { data })).status();

  // GET /api/v1/ops/queues and /pauses
  for (const url of ["/api/v1/ops/queues", "/api/v1/ops/pauses"]) {
    expect(await status("anonymous", "get", url), url).toBe(401);
    expect(await status("ada@acme.test", "get", url), url).toBe(403);
    expect(await status("oscar@acme.test", "get", url), url).toBe(200);
    expect(await status("gina@globex.test", "get", url), url).toBe(200);
    expect(await status("root@conveyor.test", "get", url), url).toBe(200);
  }
  const view = await (await tokens["oscar@acme.test"]!.get("/api/v1/ops/queues")).json();
  expect(view.queues.map((q: { name: string }) => q.name)).toEqual(["interactive", "bulk", "webhooks"]);
  for (const q of view.queues)
    expect(q.tenants.map((t: { tenant: { slug: string } }) => t.tenant.slug)).toEqual(["acme"]);
  const rootView = await (await tokens["root@conveyor.test"]!.get("/api/v1/ops/queues")).json();
  // Every tenant (other specs add tenants of their own while this runs).
  expect(rootView.queues[0].tenants.map((t: { tenant: { slug: string } }) => t.tenant.slug)).toEqual(
    expect.arrayContaining(["acme", "globex"]),
  );

  // POST /api/v1/ops/pauses
  const body = { queue: "bulk", tenant: "acme", reason: "e2e" };
  expect(await status("anonymous", "post", "/api/v1/ops/pauses", body)).toBe(401);
  expect(await status("ada@acme.test", "post", "/api/v1/ops/pauses", body)).toBe(403);
  expect(await status("gina@globex.test", "post", "/api/v1/ops/pauses", body)).toBe(404);
  const bad = await tokens["oscar@acme.test"]!.post("/api/v1/ops/pauses", { data: { queue: "nightly" } });
  expect(bad.status()).toBe(400);
  expect((await bad.json()).error.fields[0].path).toBe("queue");
  const created = await tokens["oscar@acme.test"]!.post("/api/v1/ops/pauses", { data: body });
  expect(created.status()).toBe(201);
  const pause = await created.json();
  expect(pause).toMatchObject({ queue: "bulk", tenant: { id: acme!.id, slug: "acme" }, createdBy: "oscar@acme.test" });
  expect(created.headers()["location"]).toBe(`/api/v1/ops/pauses/${pause.id}`);
  expect(await status("oscar@acme.test", "post", "/api/v1/ops/pauses", body)).toBe(409);
  // gina does not see Acme's pause, and cannot lift it.
  const ginas = await (await tokens["gina@globex.test"]!.get("/api/v1/ops/pauses")).json();
  expect(ginas.pauses.map((p: { id: string }) => p.id)).not.toContain(pause.id);

  // DELETE /api/v1/ops/pauses/{id}
  expect(await status("anonymous", "delete", `/api/v1/ops/pauses/${pause.id}`)).toBe(401);
  expect(await status("ada@acme.test", "delete", `/api/v1/ops/pauses/${pause.id}`)).toBe(403);
  expect(await status("gina@globex.test", "delete", `/api/v1/ops/pauses/${pause.id}`)).toBe(404);
  expect(await status("oscar@acme.test", "delete", "/api/v1/ops/pauses/not-an-id")).toBe(404);
  expect(await status("oscar@acme.test", "delete", `/api/v1/ops/pauses/${pause.id}`)).toBe(200);
  expect(await status("oscar@acme.test", "delete", `/api/v1/ops/pauses/${pause.id}`)).toBe(409);

  // PUT /api/v1/ops/queues/{queue}/tenants/{tenant}: platform admins only
  const limit = "/api/v1/ops/queues/bulk/tenants/acme";
  expect(await status("anonymous", "put", limit, { maxRunning: 3 })).toBe(401);
  expect(await status("oscar@acme.test", "put", limit, { maxRunning: 3 })).toBe(403);
  expect(await status("root@conveyor.test", "put", limit, { maxRunning: "three" })).toBe(400);
  expect(await status("root@conveyor.test", "put", "/api/v1/ops/queues/nightly/tenants/acme", {})).toBe(404);
  expect(await status("root@conveyor.test", "put", "/api/v1/ops/queues/bulk/tenants/nobody", {})).toBe(404);
  expect(await status("root@conveyor.test", "put", limit, { maxRunning: 3, weight: 2 })).toBe(200);
  expect(await sql("SELECT max_running, weight FROM tenant_queue_limits WHERE tenant_id = $1", [acme!.id])).toEqual([
    { max_running: 3, weight: 2 },
  ]);
  expect(await status("root@conveyor.test", "delete", limit)).toBe(200);
  expect(await sql("SELECT 1 FROM tenant_queue_limits WHERE tenant_id = $1", [acme!.id])).toEqual([]);

  // PATCH /api/v1/ops/queues/{queue}: a queue's defaults, for the whole fleet; platform admins only
  const patch = (as: string, url: string, data: unknown) => tokens[as]!.patch(url, { data });
  const queue = "/api/v1/ops/queues/webhooks";
  const [before] = await sql<{ tenant_cap: number; max_admitted: number }>(
    "SELECT tenant_cap, max_admitted FROM queues WHERE name = 'webhooks'",
  );
  expect((await patch("anonymous", queue, { tenantCap: 3 })).status()).toBe(401);
  expect((await patch("ada@acme.test", queue, { tenantCap: 3 })).status()).toBe(403);
  expect((await patch("oscar@acme.test", queue, { tenantCap: 3 })).status()).toBe(403);
  expect((await patch("root@conveyor.test", "/api/v1/ops/queues/nightly", { tenantCap: 3 })).status()).toBe(404);
  for (const [data, field] of [
    [{ tenantCap: -1 }, "tenantCap"],
    [{ window: 0 }, "window"],
    [{ window: "many" }, "window"],
    [{}, "tenantCap"],
  ] as const) {
    const res = await patch("root@conveyor.test", queue, data);
    expect(res.status(), JSON.stringify(data)).toBe(400);
    expect((await res.json()).error.fields[0].path).toBe(field);
  }
  expect(await sql("SELECT tenant_cap, max_admitted FROM queues WHERE name = 'webhooks'")).toEqual([before]);
  const changed = await patch("root@conveyor.test", queue, { window: before!.max_admitted + 1 });
  expect(changed.status()).toBe(200);
  expect(await changed.json()).toMatchObject({
    name: "webhooks",
    tenantCap: before!.tenant_cap,
    window: before!.max_admitted + 1,
    updatedBy: "root@conveyor.test",
  });
  const restored = await patch("root@conveyor.test", queue, { window: before!.max_admitted });
  expect(restored.status()).toBe(200);
});

test.describe("as oscar (operator)", () => {
  test.use({ storageState: storageStateFor("oscar@acme.test") });

  test("pausing Acme's interactive queue holds ada's new export; resume runs it", async ({ page, browser }) => {
    await page.goto("/ops/queues");
    const card = page.getByTestId("queue-interactive");
    await expect(page.getByTestId("interactive-state")).toHaveText("running");
    await card.getByRole("button", { name: "Pause interactive" }).click();
    await confirmDialog(page, "Pause", { reason: "e2e: holding new exports" });
    await expect(page.getByTestId("interactive-state")).toHaveText("paused");
    await expect(page.getByTestId("pause")).toContainText("e2e: holding new exports");
    await expect(page.getByTestId("pause")).toContainText("queue interactive · tenant acme");
    await expect(page.getByTestId("pause")).toContainText("by oscar@acme.test");

    // ada asks for an export: it waits.
    const res = await tokens["ada@acme.test"]!.post("/api/v1/exports", {
      data: { dataset: "customers", format: "csv", compression: "none" },
    });
    expect(res.status()).toBe(202);
    const { id } = await res.json();
    await page.waitForTimeout(2_500);
    const [held] = await sql<{ status: string; admitted_at: Date | null }>(
      "SELECT status, admitted_at FROM jobs WHERE id = $1",
      [id],
    );
    expect(held).toEqual({ status: "queued", admitted_at: null });
    await expect(page.getByTestId("interactive-waiting")).toHaveText(/^[1-9]/, { timeout: 5_000 });
    // ada's page says why her export waits.
    const adaContext = await browser.newContext({ storageState: storageStateFor("ada@acme.test") });
    const adaPage = await adaContext.newPage();
    await adaPage.goto(`/jobs/${id}`);
    await expect(adaPage.getByTestId("progress-text").first()).toContainText("paused by an operator");

    await card.getByRole("button", { name: "Resume interactive" }).click();
    await expect(page.getByTestId("interactive-state")).toHaveText("running");
    await expect
      .poll(async () => (await sql<{ status: string }>("SELECT status FROM jobs WHERE id = $1", [id]))[0]?.status, {
        timeout: 30_000,
      })
      .toBe("succeeded");
    await expect(adaPage.getByTestId("job-status")).toHaveText("succeeded", { timeout: 10_000 });
    await adaContext.close();
    const audit = await sql<{ action: string }>(
      "SELECT action FROM audit_logs WHERE action LIKE 'queue.%' AND details->>'queue' = 'interactive' ORDER BY created_at",
    );
    expect(audit.map((a) => a.action)).toEqual(["queue.pause", "queue.resume"]);
  });
});

test.describe("as oscar (operator), the queues' defaults", () => {
  test.use({ storageState: storageStateFor("oscar@acme.test") });

  test("are shown but not editable", async ({ page }) => {
    await page.goto("/ops/queues");
    await expect(page.getByTestId("bulk-defaults")).toContainText(/Default cap \d+ per tenant · window \d+/);
    await expect(page.getByRole("button", { name: "Edit defaults" })).toHaveCount(0);
    // The API refuses too, from the operator's own session.
    const res = await page.request.patch("/api/v1/ops/queues/bulk", { data: { tenantCap: 1 } });
    expect(res.status()).toBe(403);
  });
});

test.describe("as ada (member)", () => {
  test.use({ storageState: storageStateFor("ada@acme.test") });

  test("members have no Queues page", async ({ page }) => {
    await page.goto("/exports");
    await expect(page.getByRole("link", { name: "Queues" })).toHaveCount(0);
    const res = await page.goto("/ops/queues");
    expect(res?.status()).toBe(404);
  });
});

test.describe("as root (platform admin)", () => {
  test.use({ storageState: storageStateFor("root@conveyor.test") });

  test("sees every tenant and sets a tenant's cap", async ({ page }) => {
    await page.goto("/ops/queues");
    const row = page.getByTestId("tenant-bulk-globex");
    await expect(row).toBeVisible();
    await expect(page.getByTestId("tenant-bulk-acme")).toBeVisible();
    await row.getByRole("button", { name: "Edit" }).click();
    await row.getByLabel("Cap").fill("2");
    await row.getByRole("button", { name: "Save" }).click();
    await expect(row).toContainText("2");
    await expect(row.getByText("default")).toHaveCount(0);
    const [g] = await sql<{ id: string }>("SELECT id FROM tenants WHERE slug = 'globex'");
    expect(
      await sql("SELECT max_running FROM tenant_queue_limits WHERE tenant_id = $1 AND queue = 'bulk'", [g!.id]),
    ).toEqual([{ max_running: 2 }]);
    await sql("DELETE FROM tenant_queue_limits");
  });

  test("edits a queue's default cap and window for the whole fleet", async ({ page }) => {
    const [before] = await sql<{ tenant_cap: number; max_admitted: number }>(
      "SELECT tenant_cap, max_admitted FROM queues WHERE name = 'webhooks'",
    );
    await page.goto("/ops/queues");
    const card = page.getByTestId("queue-webhooks");
    await card.getByRole("button", { name: "Edit defaults" }).click();
    const form = card.getByRole("form", { name: "Defaults of webhooks" });
    await expectAccessible(page, "a queue's defaults, open for editing");
    await form.getByLabel("Default cap per tenant").fill(String(before!.tenant_cap + 2));
    await form.getByLabel("Window (all tenants)").fill(String(before!.max_admitted + 3));
    await form.getByRole("button", { name: "Save defaults" }).click();
    await expect(page.getByTestId("webhooks-defaults")).toContainText(
      `Default cap ${before!.tenant_cap + 2} per tenant · window ${before!.max_admitted + 3} admitted at once`,
    );
    await expect(page.getByTestId("webhooks-defaults")).toContainText("set by root@conveyor.test");
    expect(await sql("SELECT tenant_cap, max_admitted FROM queues WHERE name = 'webhooks'")).toEqual([
      { tenant_cap: before!.tenant_cap + 2, max_admitted: before!.max_admitted + 3 },
    ]);
    const [audit] = await sql<{ details: unknown }>(
      "SELECT details FROM audit_logs WHERE action = 'queue.settings' ORDER BY id DESC LIMIT 1",
    );
    expect(audit?.details).toEqual({
      queue: "webhooks",
      before: { tenantCap: before!.tenant_cap, window: before!.max_admitted },
      after: { tenantCap: before!.tenant_cap + 2, window: before!.max_admitted + 3 },
    });
    // A bad value is refused with the field named, and nothing changes.
    await card.getByRole("button", { name: "Edit defaults" }).click();
    await form.getByLabel("Window (all tenants)").fill("0");
    await form.evaluate((f: HTMLFormElement) => (f.noValidate = true));
    await form.getByRole("button", { name: "Save defaults" }).click();
    await expect(form.getByRole("alert")).toContainText("window");
    await form.getByRole("button", { name: "Cancel" }).click();
    await sql("UPDATE queues SET tenant_cap = $1, max_admitted = $2 WHERE name = 'webhooks'", [
      before!.tenant_cap,
      before!.max_admitted,
    ]);
  });
});
