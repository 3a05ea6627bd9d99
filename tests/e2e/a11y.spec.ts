import { expect, test } from "./fixtures";
import { expectAccessible, sql, storageStateFor } from "./helpers";

// Every page of the product under axe-core (WCAG 2.1 A and AA): no serious or critical violation.
// Pages with data are checked once it has loaded, and the confirmation dialog while it is open.

test("the sign-in page and the not-found page", async ({ browser }) => {
  const context = await browser.newContext({ storageState: { cookies: [], origins: [] } });
  const page = await context.newPage();
  await page.goto("/login");
  await expect(page.getByRole("button", { name: "Sign in" })).toBeVisible();
  await expectAccessible(page, "/login");
  await page.goto("/no-such-page");
  await expectAccessible(page, "the 404 page");
  await context.close();
});

test.describe("as ada (member)", () => {
  test.use({ storageState: storageStateFor("ada@acme.test") });

  test("exports, a job, settings, and a confirmation dialog", async ({ page }) => {
    await page.goto("/exports");
    await expect(page.getByRole("heading", { name: "Exports", exact: true })).toBeVisible();
    await expect(page.getByText("Loading exports…")).toHaveCount(0);
    await expectAccessible(page, "/exports");

    const [job] = await sql<{ id: string }>(
      `SELECT j.id FROM jobs j JOIN tenants t ON t.id = j.tenant_id
       WHERE t.slug = 'acme' AND j.type = 'export' ORDER BY j.created_at DESC LIMIT 1`,
    );
    const res = job
      ? null
      : await page.request.post("/api/v1/exports", { data: { dataset: "customers", format: "csv" } });
    const id = job?.id ?? ((await res!.json()) as { id: string }).id;
    await page.goto(`/jobs/${id}`);
    await expect(page.getByTestId("job-status")).toBeVisible();
    await expectAccessible(page, "a job's page");

    await page.goto("/settings");
    await expect(page.getByRole("button", { name: "Create token" })).toBeVisible();
    await expectAccessible(page, "/settings");
  });

  test("webhooks, a new endpoint's secret, and an endpoint's page with a delivery open", async ({ page }) => {
    await page.goto("/settings/webhooks");
    await expect(page.getByRole("heading", { name: "Webhooks", level: 1 })).toBeVisible();
    await page.getByRole("button", { name: "New endpoint" }).click();
    const form = page.getByRole("form", { name: "New endpoint" });
    await form.getByLabel("URL").fill(`https://hooks.example.com/a11y-${Date.now()}`);
    await form.getByRole("button", { name: "Add endpoint" }).click();
    await expect(page.getByTestId("new-secret")).toBeVisible();
    await expect(page.getByText(/^Loading/)).toHaveCount(0);
    await expectAccessible(page, "/settings/webhooks");

    const href = await page.getByTestId("new-secret").getByRole("link", { name: "Open it" }).getAttribute("href");
    const id = href!.split("/").at(-1)!;
    try {
      await page.goto(href!);
      await page.getByRole("button", { name: "Send test event" }).click();
      await page.getByTestId("delivery-row").first().getByRole("button", { name: "ping" }).click();
      await expect(page.getByTestId("delivery-detail")).toBeVisible();
      await expect(page.getByText(/^Loading/)).toHaveCount(0);
      await expectAccessible(page, "an endpoint's page");
    } finally {
      await page.request.delete(`/api/v1/webhooks/endpoints/${id}`);
    }
  });

  test("schedules, a schedule's page with its editor open, and a scheduled export", async ({ page }) => {
    const res = await page.request.post("/api/v1/schedules", {
      data: {
        name: `a11y ${Date.now()}`,
        cron: "0 3 * * *",
        timezone: "Europe/Berlin",
        task: "export",
        input: { dataset: "customers" },
        paused: true,
      },
    });
    expect(res.status()).toBe(201);
    const { id } = (await res.json()) as { id: string };
    try {
      await page.goto("/schedules?new=1");
      await expect(page.getByRole("heading", { name: "Schedules", level: 1 })).toBeVisible();
      await expect(page.getByText(/^Loading/)).toHaveCount(0);
      await expect(page.getByTestId("preview-run")).toHaveCount(5);
      await expectAccessible(page, "/schedules");

      await page.goto(`/schedules/${id}`);
      await expect(page.getByTestId("next-run")).toHaveCount(5);
      await expect(page.getByText(/^Loading/)).toHaveCount(0);
      await page.getByRole("button", { name: "Edit" }).click();
      await expect(page.getByRole("form", { name: "Edit the schedule" })).toBeVisible();
      await expectAccessible(page, "a schedule's page");
    } finally {
      await page.request.delete(`/api/v1/schedules/${id}`);
    }

    await page.goto("/exports?new=1");
    await page.getByLabel("Run later").check();
    await expect(page.getByLabel("Start at")).toBeVisible();
    await expectAccessible(page, "/exports with Run later");
  });
});

test.describe("as oscar (operator)", () => {
  test.use({ storageState: storageStateFor("oscar@acme.test") });

  for (const path of [
    "/ops/overview",
    "/ops/jobs",
    "/ops/dead-letters",
    "/ops/stuck",
    "/ops/queues",
    "/ops/audit",
    "/ops/schedules",
    "/ops/webhooks",
  ]) {
    test(`the console: ${path}`, async ({ page }) => {
      await page.goto(path);
      await expect(page.locator("main h1")).toBeVisible();
      await expect(page.getByText(/^Loading/)).toHaveCount(0);
      await expectAccessible(page, path);
    });
  }

  test("the pause confirmation, open", async ({ page }) => {
    await page.goto("/ops/queues");
    await page.getByTestId("queue-bulk").getByRole("button", { name: "Pause bulk" }).click();
    await expect(page.getByRole("dialog")).toBeVisible();
    await expectAccessible(page, "the confirmation dialog");
    await page.getByRole("dialog").getByRole("button", { name: "Go back" }).click();
    await expect(page.getByRole("dialog")).toHaveCount(0);
  });
});

test.describe("as root (platform admin)", () => {
  test.use({ storageState: storageStateFor("root@conveyor.test") });

  test("the console: /ops/workers", async ({ page }) => {
    await page.goto("/ops/workers");
    await expect(page.locator("main h1")).toBeVisible();
    await expect(page.getByText(/^Loading/)).toHaveCount(0);
    await expectAccessible(page, "/ops/workers");
  });
});
