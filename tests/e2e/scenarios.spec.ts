import type { Browser, Page, TestInfo } from "@playwright/test";
import { expect, test } from "./fixtures";
import { confirmDialog, DEMO_PASSWORD, sidewaysOverflow, sql, storageStateFor } from "./helpers";

/**
 * Whole scenarios as people live them, each at desktop and at phone width,
 * asserting what the pages say, with a screenshot of every step kept as a test
 * artifact. They run in a project of their own, after the others (a pause here
 * holds the tenant's export parts).
 */

const WIDTHS = [
  { name: "desktop", viewport: { width: 1280, height: 900 } },
  { name: "phone", viewport: { width: 390, height: 844 } },
] as const;

/** A screenshot of the step, attached to the test's report, and the page fits its width (no sideways scroll). */
async function step(page: Page, info: TestInfo, name: string): Promise<void> {
  await info.attach(`${info.project.name}-${name}`, {
    body: await page.screenshot({ fullPage: true }),
    contentType: "image/png",
  });
  const { over, culprits } = await sidewaysOverflow(page);
  expect(over, `${name}: the page scrolls sideways by ${over} px: ${culprits.join("; ")}`).toBeLessThanOrEqual(0);
}

/** Goes to a page through the main navigation (the Menu at phone width), which then marks it current. */
async function navigate(page: Page, label: string, path: string, phone: boolean): Promise<void> {
  const link = page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: label, exact: true });
  if (phone) await page.getByRole("button", { name: "Menu" }).click();
  await link.click();
  await expect(page).toHaveURL(new RegExp(`${path}$`));
  if (phone) await page.getByRole("button", { name: "Menu" }).click();
  await expect(link).toHaveAttribute("aria-current", "page");
  if (phone) await page.getByRole("button", { name: "Close menu" }).click();
}

async function contextFor(browser: Browser, who: string, viewport: { width: number; height: number }) {
  return browser.newContext({ storageState: storageStateFor(who), viewport });
}

for (const { name, viewport } of WIDTHS) {
  const phone = name === "phone";

  test(`operator's incident at ${name} width: exports are stuck, from the overview to the cause to the fix`, async ({
    browser,
  }, info) => {
    test.setTimeout(240_000);
    const reason = `warehouse maintenance ${name} ${Date.now()}`;
    const oscarCtx = await contextFor(browser, "oscar@acme.test", viewport);
    const adaCtx = await contextFor(browser, "ada@acme.test", viewport);
    const oscar = await oscarCtx.newPage();
    const ada = await adaCtx.newPage();
    try {
      // The cause: an operator paused the export parts of the tenant, with a reason.
      await oscar.goto("/ops/queues");
      const form = oscar.getByRole("form", { name: "Pause a scope" });
      await form.getByLabel("Job type").selectOption("export_part");
      await form.getByRole("button", { name: "Pause" }).click();
      await confirmDialog(oscar, "Pause", { reason });
      await expect(oscar.getByTestId("pause").filter({ hasText: reason })).toBeVisible();

      // A member asks for a big export: it splits into parts, which the pause holds.
      const res = await ada.request.post("/api/v1/exports", {
        data: { dataset: "events", format: "csv", compression: "gzip" },
      });
      expect(res.status()).toBe(202);
      const jobId = ((await res.json()) as { id: string }).id;

      // What the member sees: the export's parts are paused, why, and who can resume.
      await ada.goto(`/jobs/${jobId}`);
      await expect(ada.getByTestId("job-title")).toHaveText("Events · CSV.gz export");
      await expect(ada.getByTestId("job-requester")).toContainText("Requested by ada@acme.test");
      const notice = ada.getByTestId("pause-notice");
      await expect(notice).toContainText("Its parts are paused by oscar@acme.test", { timeout: 60_000 });
      await expect(notice).toContainText(reason);
      await expect(notice).toContainText("An operator of your organisation can resume it");
      await expect(ada.getByTestId("pause-badge").first()).toBeVisible();
      await step(ada, info, "member-sees-paused-parts");

      // The operator: the overview says a pause holds jobs back, on the row of the held type.
      await oscar.goto("/ops/overview");
      await expect(oscar.getByTestId("overview-pause").filter({ hasText: reason })).toBeVisible();
      await step(oscar, info, "overview-with-pause");

      // Stuck tells the cause at once, in one group for the pause: the held parts and the export waiting for them.
      await navigate(oscar, "Stuck", "/ops/stuck", phone);
      const held = oscar
        .getByTestId("stuck-group")
        .filter({ hasText: reason })
        .and(oscar.locator('[data-kind="paused"]'));
      await expect(held).toBeVisible({ timeout: 30_000 });
      await expect(held).toContainText("held by a pause");
      await expect(held).toContainText("type export_part");
      await expect(held.getByTestId("stuck-pause")).toContainText("Paused by oscar@acme.test");
      // One group per pause: the export waiting for its held parts first, then the parts themselves.
      await expect(held.getByRole("link", { name: "Events · CSV.gz export", exact: true })).toHaveAttribute(
        "href",
        `/jobs/${jobId}`,
      );
      await expect(oscar.getByTestId("stuck-group").filter({ hasText: reason })).toHaveCount(1);
      await expect(oscar.getByText(/Workers page/)).toHaveCount(0);
      await step(oscar, info, "stuck-grouped-by-cause");

      // The fix, on the row: resume the pause (confirmed).
      await held.getByRole("button", { name: "Resume the pause" }).click();
      await confirmDialog(oscar, "Resume");
      await expect(oscar.getByRole("status").filter({ hasText: "Pause resumed" })).toBeVisible();
      await expect(oscar.getByTestId("stuck-group").filter({ hasText: reason })).toHaveCount(0, { timeout: 30_000 });
      await step(oscar, info, "stuck-after-resume");

      // The confirmation: the export runs to the end, and the notice is gone.
      await oscar.goto(`/jobs/${jobId}`);
      await expect(oscar.getByTestId("job-status")).toHaveText("succeeded", { timeout: 180_000 });
      await expect(oscar.getByTestId("pause-notice")).toHaveCount(0);
      await expect(oscar.getByTestId("breadcrumb-parent")).toHaveCount(0);
      await step(oscar, info, "export-succeeded");
      // Its parts link back to it.
      await oscar.getByTestId("job-part").first().getByRole("link").click();
      await expect(oscar.getByTestId("breadcrumb-parent")).toHaveText("Events · CSV.gz export");
      await expect(oscar.getByTestId("parent-link")).toHaveAttribute("href", `/jobs/${jobId}`);
      await step(oscar, info, "part-links-to-export");
    } finally {
      await sql("UPDATE queue_pauses SET resumed_at = now() WHERE reason = $1 AND resumed_at IS NULL", [reason]);
      await oscarCtx.close();
      await adaCtx.close();
    }
  });

  test(`member's first five minutes at ${name} width: sign in, export, follow it, download, a token`, async ({
    browser,
  }, info) => {
    test.setTimeout(180_000);
    const context = await browser.newContext({ storageState: { cookies: [], origins: [] }, viewport });
    const page = await context.newPage();
    try {
      await page.goto("/exports");
      await expect(page).toHaveURL(/\/login/);
      await page.getByLabel("E-mail").fill("gus@globex.test");
      await page.getByLabel("Password").fill(DEMO_PASSWORD);
      await page.getByRole("button", { name: "Sign in" }).click();
      await expect(page.getByRole("heading", { name: "Exports", exact: true })).toBeVisible();
      await step(page, info, "member-exports-page");

      await page.getByRole("link", { name: "New export" }).click();
      const form = page.getByRole("form", { name: "Request an export" });
      await form.getByLabel("Dataset").selectOption("customers");
      await form.getByLabel("Format").selectOption("csv");
      await form.getByRole("button", { name: "Request export" }).click();
      await expect(page.getByRole("status").filter({ hasText: "Export queued" })).toBeVisible();
      await page.getByRole("link", { name: "Follow it" }).click();

      await expect(page.getByTestId("job-title")).toHaveText("Customers · CSV export");
      await expect(page.getByTestId("job-requester")).toContainText("Requested by gus@globex.test");
      await expect(page.getByTestId("job-status")).toHaveText("succeeded", { timeout: 60_000 });
      // A finished job says what it did, not a rate or an ETA.
      await expect(page.getByTestId("progress-text")).toContainText("100% · 500 of 500 rows in");
      await expect(page.getByTestId("progress-text")).not.toContainText("/s");
      await step(page, info, "member-export-done");

      const download = page.waitForEvent("download");
      await page.getByTestId("download").click();
      expect((await download).suggestedFilename()).toMatch(/^customers-[0-9a-f]{8}\.csv$/);

      // Back to the list through the breadcrumb.
      await page.getByRole("navigation", { name: "Breadcrumb" }).getByRole("link", { name: "Exports" }).click();
      await expect(page.getByRole("heading", { name: "Exports", exact: true })).toBeVisible();

      await navigate(page, "Settings", "/settings", phone);
      await page.getByLabel("Token name").fill(`first-minutes-${name}`);
      await page.getByRole("button", { name: "Create token" }).click();
      await expect(page.getByRole("button", { name: /Copy/ }).first()).toBeVisible();
      await step(page, info, "member-new-token");
    } finally {
      await context.close();
    }
  });
}
