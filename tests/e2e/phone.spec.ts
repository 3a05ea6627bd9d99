import type { Page } from "@playwright/test";
import { expect, test } from "./fixtures";
import { expectAccessible, sidewaysOverflow, sql, storageStateFor } from "./helpers";

/**
 * Every page at phone width (390 × 844): nothing makes the page scroll sideways
 * (wide tables scroll inside their own box), the navigation is a Menu that opens
 * the same links with the current one marked, and axe finds nothing grave.
 */
test.use({ viewport: { width: 390, height: 844 } });

async function checkPage(page: Page, path: string, current?: string): Promise<void> {
  await page.goto(path);
  await expect(page.locator("main h1").first()).toBeVisible();
  await expect(page.getByText(/^Loading/)).toHaveCount(0);
  const { over, culprits } = await sidewaysOverflow(page);
  expect(over, `${path} scrolls sideways by ${over} px at 390 px: ${culprits.join("; ")}`).toBeLessThanOrEqual(0);
  // The links are behind the Menu button; Sign out too.
  await expect(page.getByRole("button", { name: "Sign out" })).toBeHidden();
  await page.getByRole("button", { name: "Menu" }).click();
  const nav = page.getByRole("navigation", { name: "Main" });
  await expect(nav.getByRole("button", { name: "Sign out" })).toBeVisible();
  if (current)
    await expect(nav.getByRole("link", { name: current, exact: true })).toHaveAttribute("aria-current", "page");
  await expectAccessible(page, `${path} at 390 px with the menu open`);
  await page.getByRole("button", { name: "Close menu" }).click();
}

test.describe("as ada (member)", () => {
  test.use({ storageState: storageStateFor("ada@acme.test") });

  test("exports, a job, imports, schedules, my jobs, settings and webhooks", async ({ page }) => {
    await checkPage(page, "/exports", "Exports");
    const [job] = await sql<{ id: string }>(
      `SELECT j.id FROM jobs j JOIN tenants t ON t.id = j.tenant_id
        WHERE t.slug = 'acme' AND j.type = 'export' AND j.parent_id IS NULL ORDER BY j.created_at DESC LIMIT 1`,
    );
    const id =
      job?.id ??
      (
        (await (await page.request.post("/api/v1/exports", { data: { dataset: "customers" } })).json()) as {
          id: string;
        }
      ).id;
    await checkPage(page, `/jobs/${id}`);
    await checkPage(page, "/imports", "Imports");
    // An import's timeline (stages, counts, bad rows) when the tenant has one (tests/e2e/imports.spec.ts makes some).
    const [imp] = await sql<{ id: string }>(
      `SELECT j.id FROM jobs j JOIN tenants t ON t.id = j.tenant_id
        WHERE t.slug = 'acme' AND j.type = 'import' ORDER BY j.created_at DESC LIMIT 1`,
    );
    if (imp) await checkPage(page, `/imports?id=${imp.id}`, "Imports");
    await checkPage(page, "/schedules", "Schedules");
    await checkPage(page, "/jobs", "My jobs");
    await checkPage(page, "/settings", "Settings");
    await checkPage(page, "/settings/webhooks");
  });
});

test.describe("as oscar (operator)", () => {
  test.use({ storageState: storageStateFor("oscar@acme.test") });

  for (const [path, label] of [
    ["/ops/overview", "Overview"],
    ["/ops/jobs", "Jobs"],
    ["/ops/queues", "Queues"],
    ["/ops/dead-letters", "Dead letters"],
    ["/ops/schedules", "All schedules"],
    ["/ops/webhooks", "Webhooks"],
    ["/ops/stuck", "Stuck"],
    ["/ops/audit", "Audit"],
    ["/ops/people", "People"],
  ] as const) {
    test(`the console at phone width: ${path}`, async ({ page }) => {
      await checkPage(page, path, label);
    });
  }
});

test.describe("as root (platform admin)", () => {
  test.use({ storageState: storageStateFor("root@conveyor.test") });

  test("the fleet and the overview of every tenant", async ({ page }) => {
    await checkPage(page, "/ops/workers", "Workers");
    await checkPage(page, "/ops/overview", "Overview");
    await checkPage(page, "/ops/queues", "Queues");
  });
});
