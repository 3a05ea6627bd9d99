import { expect, test } from "./fixtures";
import { cliToken, sql, storageStateFor } from "./helpers";

test.describe("as root (platform admin)", () => {
  test.use({ storageState: storageStateFor("root@conveyor.test") });

  test("the Workers page lists npm start's interactive and bulk pools, running", async ({ page }) => {
    await page.goto("/ops/workers");
    const live = page.getByTestId("worker").filter({ has: page.getByTestId("worker-state").getByText("running") });
    await expect(live.filter({ hasText: "interactive" }).first()).toBeVisible();
    await expect(live.filter({ hasText: "bulk" }).first()).toBeVisible();
  });
});

test.describe("as oscar (operator)", () => {
  test.use({ storageState: storageStateFor("oscar@acme.test") });

  test("the Audit page shows his own actions, filtered by action", async ({ page, playwright }) => {
    const reason = `audit-e2e-${Date.now()}`;
    const api = await playwright.request.newContext({
      baseURL: test.info().project.use.baseURL,
      extraHTTPHeaders: { Authorization: `Bearer ${cliToken("oscar@acme.test")}` },
    });
    // A scope no other test uses: exports on the bulk queue (only export replays run there).
    const pause = await (
      await api.post("/api/v1/ops/pauses", { data: { queue: "bulk", type: "export", reason } })
    ).json();
    expect((await api.delete(`/api/v1/ops/pauses/${pause.id}`)).status()).toBe(200);
    await api.dispose();

    await page.goto("/ops/audit");
    await page.getByLabel("Action").fill("queue.");
    await page.getByRole("button", { name: "Filter" }).click();
    // Targets show by their end (the whole id in data-id and on hover).
    const entries = page.getByTestId("audit-entry").filter({ has: page.locator(`[data-id="${pause.id}"]`) });
    await expect(entries).toHaveCount(2);
    await expect(entries.filter({ hasText: "queue.pause" })).toContainText(reason);
    await expect(entries.first()).toContainText("oscar@acme.test (API token)");
    await expect(page.getByTestId("audit-entry").filter({ hasText: "globex" })).toHaveCount(0);
  });

  test("the Stuck page shows a job retrying again and again, with advice", async ({ page }) => {
    const [row] = await sql<{ id: string }>(
      `INSERT INTO jobs (id, tenant_id, type, queue, status, input, input_hash, attempts, max_attempts, error_class,
                         error_message, run_at, started_at, updated_at)
       SELECT gen_random_uuid(), id, 'probe', 'bulk', 'retrying', '{}', 'e2e', 6, 10, 'retryable',
              'connection refused by stuck-e2e', now() + interval '1 hour', now(), now()
       FROM tenants WHERE slug = 'acme' RETURNING id`,
    );
    try {
      await page.goto("/ops/stuck");
      const group = page.getByTestId("stuck-group").filter({ hasText: "connection refused by stuck-e2e" });
      await expect(group).toContainText("retrying again and again");
      await expect(group).toContainText("Fix the cause, or cancel it");
      await expect(group.getByRole("button", { name: "Retry now" })).toBeVisible();
      const stuck = group.getByTestId("stuck-job").filter({ hasText: "connection refused by stuck-e2e" });
      await expect(stuck.getByRole("link", { name: "Probe" })).toHaveAttribute("href", `/jobs/${row!.id}`);
    } finally {
      await sql("DELETE FROM jobs WHERE id = $1", [row!.id]);
    }
  });

  test("the Workers page is for platform admins only", async ({ page }) => {
    await page.goto("/exports");
    await expect(page.getByRole("link", { name: "Workers" })).toHaveCount(0);
    expect((await page.goto("/ops/workers"))?.status()).toBe(404);
  });
});
