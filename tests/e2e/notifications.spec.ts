import type { Page } from "@playwright/test";
import { expect, test } from "./fixtures";
import { expectAccessible, sidewaysOverflow, sql, storageStateFor } from "./helpers";

/**
 * The bell (issue 35): a member's export that ends shows on the bell live (over the tenant's event
 * stream, no reload), its panel lists it and links to the job, "Mark all read" empties the count
 * and is stored; the same at phone width (390 px) without opening the menu; axe finds nothing
 * grave with the panel open, nor on the notifications page, whose e-mail settings are stored.
 */
test.use({ storageState: storageStateFor("gus@globex.test") });

async function requestExport(page: Page): Promise<string> {
  const res = await page.request.post("/api/v1/exports", { data: { dataset: "customers", format: "csv" } });
  expect(res.status()).toBe(202);
  return ((await res.json()) as { id: string }).id;
}

async function bellSeesJob(page: Page, jobId: string): Promise<void> {
  const bell = page.getByTestId("notification-bell");
  await expect(bell).toBeVisible();
  // The page stays as it is: the count moves when the job ends.
  await expect(page.getByTestId("notification-count")).toBeVisible({ timeout: 60_000 });
  await bell.click();
  await expect(bell).toHaveAttribute("aria-expanded", "true");
  const panel = page.getByRole("region", { name: "Notifications" });
  await expect(panel.locator(`a[href="/jobs/${jobId}"]`)).toBeVisible({ timeout: 60_000 });
  await expect(panel.locator(`a[href="/jobs/${jobId}"]`)).toContainText("Export finished");
}

async function markAllRead(page: Page, jobId: string): Promise<void> {
  const panel = page.getByRole("region", { name: "Notifications" });
  await panel.getByRole("button", { name: "Mark all read" }).click();
  await expect(page.getByTestId("notification-count")).toHaveCount(0);
  await expect(page.getByTestId("notification-bell")).toHaveAttribute("aria-label", "Notifications, none unread");
  const [row] = await sql<{ read: boolean }>(
    `SELECT read_at IS NOT NULL AS read FROM notifications WHERE job_id = $1`,
    [jobId],
  );
  expect(row?.read).toBe(true);
}

test("desktop (1280 px): an export's end reaches the bell live; the panel links it, marks read, and is accessible", async ({
  page,
}) => {
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto("/exports");
  await expect(page.getByRole("heading", { name: "Exports", exact: true })).toBeVisible();
  // Start from nothing unread, so the count that appears is this export's.
  await page.request.post("/api/v1/notifications/read", { data: { all: true } });
  await page.reload();
  await expect(page.getByTestId("notification-bell")).toHaveAttribute("aria-label", "Notifications, none unread");
  const id = await requestExport(page);
  await bellSeesJob(page, id);
  await expectAccessible(page, "the bell's panel, open, at 1280 px");
  await page.keyboard.press("Escape");
  await expect(page.getByRole("region", { name: "Notifications" })).toHaveCount(0);
  await page.getByTestId("notification-bell").click();
  await markAllRead(page, id);
});

test("phone (390 px): the bell is beside the menu, its panel fits the screen and is accessible", async ({ page }) => {
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto("/exports");
  await expect(page.getByRole("heading", { name: "Exports", exact: true })).toBeVisible();
  await page.request.post("/api/v1/notifications/read", { data: { all: true } });
  await page.reload();
  const id = await requestExport(page);
  await bellSeesJob(page, id);
  const { over, culprits } = await sidewaysOverflow(page);
  expect(over, `the open panel scrolls sideways by ${over} px at 390 px: ${culprits.join("; ")}`).toBeLessThanOrEqual(
    0,
  );
  await expectAccessible(page, "the bell's panel, open, at 390 px");
  // Opening a notification goes to its job and marks it read.
  await page.getByRole("region", { name: "Notifications" }).locator(`a[href="/jobs/${id}"]`).click();
  await expect(page).toHaveURL(new RegExp(`/jobs/${id}$`));
  await expect
    .poll(
      async () =>
        (
          await sql<{ read: boolean }>(`SELECT read_at IS NOT NULL AS read FROM notifications WHERE job_id = $1`, [id])
        )[0]?.read,
    )
    .toBe(true);
});

test("the notifications page lists them and stores the e-mail settings; accessible at both widths", async ({
  page,
}) => {
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 844 });
    await page.goto("/notifications");
    await expect(page.getByRole("heading", { name: "Notifications", level: 1 })).toBeVisible();
    await expect(page.getByText(/^Loading/)).toHaveCount(0);
    const { over } = await sidewaysOverflow(page);
    expect(over).toBeLessThanOrEqual(0);
    await expectAccessible(page, `/notifications at ${width} px`);
  }
  const box = page.getByRole("checkbox", { name: /My exports end/ });
  await expect(box).toBeChecked();
  await box.uncheck();
  await expect(box).not.toBeChecked();
  await expect
    .poll(
      async () =>
        (
          await sql<{ email: boolean }>(
            `SELECT p.email FROM notification_preferences p JOIN users u ON u.id = p.user_id
        WHERE u.email = 'gus@globex.test' AND p.kind = 'export'`,
          )
        )[0]?.email,
    )
    .toBe(false);
  await box.check();
  await expect(box).toBeChecked();
});
