import type { Page } from "@playwright/test";
import { expect, test } from "./fixtures";
import { cliToken, expectAccessible, sessionHeaders, sidewaysOverflow, sql } from "./helpers";
import { task, WIDTHS } from "./task";

/**
 * Two member tasks of issue 38, walked at 1280 and 390 px with their clicks counted:
 * (a) "why did my export fail, and re-run it": from /exports, the failed filter finds it, its row
 *     says why in plain words, Request again fills the form, and the new export succeeds;
 * (b) "when does my schedule run next, in my zone": a schedule made in Tokyo by a browser in New
 *     York shows its next runs on Tokyo's clock and on the reader's ("your time").
 */

/** axe finds nothing serious and nothing scrolls sideways. */
async function checkScreen(page: Page, what: string): Promise<void> {
  const { over, culprits } = await sidewaysOverflow(page);
  expect(over, `${what}: the page scrolls sideways by ${over} px: ${culprits.join("; ")}`).toBeLessThanOrEqual(0);
  await expectAccessible(page, what);
}

/**
 * A tenant of its own with one member, signed in on `page`: the failure made below holds that
 * tenant's exports only, never the other specs' (they share one server).
 */
async function freshMember(page: Page, tag: string): Promise<{ email: string; slug: string; root: string }> {
  const base = test.info().project.use.baseURL!;
  const root = cliToken("root@conveyor.test");
  const slug = `tasks${tag}${Date.now()}`;
  const email = `m@${slug}.test`;
  const made = await page.request.post(`${base}/api/v1/ops/tenants`, {
    headers: { Authorization: `Bearer ${root}` },
    data: { slug, name: `Tasks ${tag}` },
  });
  expect(made.status()).toBe(201);
  const invite = await page.request.post(`${base}/api/v1/invites`, {
    headers: sessionHeaders("root@conveyor.test", base),
    data: { email, tenant: slug },
  });
  expect(invite.status()).toBe(201);
  const { link } = (await invite.json()) as { link: string };
  const accepted = await page.request.post(`${base}/api/v1/invites/accept`, {
    data: { token: link.split("/invite/")[1], name: "Mia Member", password: "mia's long password" },
  });
  expect(accepted.ok()).toBe(true);
  await page.goto("/login");
  await page.getByLabel("E-mail").fill(email);
  await page.getByLabel("Password").fill("mia's long password");
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page).not.toHaveURL(/\/login/);
  return { email, slug, root };
}

/**
 * An export of the member's that fails for a reason of its own: held by a pause of their tenant's
 * exports while its input is made one the worker refuses (a dataset that no longer exists: a
 * permanent failure), then let go. Returns its id once it failed.
 */
async function failedExport(page: Page, slug: string, root: string): Promise<string> {
  const base = test.info().project.use.baseURL!;
  const admin = { Authorization: `Bearer ${root}` };
  const pause = await page.request.post(`${base}/api/v1/ops/pauses`, {
    headers: admin,
    data: { tenant: slug, type: "export", reason: "tasks-exports e2e" },
  });
  expect(pause.status()).toBe(201);
  const pauseId = ((await pause.json()) as { id: string }).id;
  let id: string;
  try {
    const res = await page.request.post("/api/v1/exports", { data: { dataset: "customers", format: "csv" } });
    expect(res.status()).toBe(202);
    id = ((await res.json()) as { id: string }).id;
    await sql(`UPDATE jobs SET input = jsonb_set(input, '{dataset}', '"contacts"') WHERE id = $1`, [id]);
  } finally {
    expect((await page.request.delete(`${base}/api/v1/ops/pauses/${pauseId}`, { headers: admin })).status()).toBe(200);
  }
  await expect
    .poll(async () => (await sql<{ s: string }>("SELECT status::text AS s FROM jobs WHERE id = $1", [id]))[0]?.s, {
      timeout: 120_000,
    })
    .toBe("failed");
  return id;
}

for (const { name, viewport } of WIDTHS) {
  test.describe(`at ${name} width`, () => {
    test.use({ viewport, storageState: { cookies: [], origins: [] } });

    test(`why did my export fail, and re-run it (${name})`, async ({ page }, info) => {
      test.setTimeout(300_000);
      const { email, slug, root } = await freshMember(page, name);
      // Another export of theirs that succeeds, so the failed filter has something to leave out.
      const ok = await page.request.post("/api/v1/exports", { data: { dataset: "orders", format: "csv" } });
      expect(ok.status()).toBe(202);
      const okId = ((await ok.json()) as { id: string }).id;
      const id = await failedExport(page, slug, root);

      const t = task(page, info, "why did my export fail, and re-run it");
      await page.goto("/exports");
      const list = page.getByRole("list", { name: "Exports, newest first" });
      await expect(list.locator(`[data-job-id="${okId}"]`)).toBeVisible();
      await t.shot("the exports list");
      await checkScreen(page, "/exports");

      // The failed filter: one click, kept in the URL.
      await t.click(page.getByLabel("Failed only"));
      await expect(page).toHaveURL(/[?&]status=failed(&|$)/);
      const row = list.locator(`[data-job-id="${id}"]`);
      await expect(row).toBeVisible();
      await expect(list.locator(`[data-job-id="${okId}"]`)).toHaveCount(0);
      await expect(page.getByLabel("State")).toHaveValue("failed");
      await expect(row.getByTestId("job-status")).toHaveText("failed");
      await expect(row.getByTestId("export-source")).toHaveText(`by ${email}`);
      // The plain reason first (the request's fault, what to do), the worker's words below it.
      await expect(row.getByTestId("failure-summary")).toHaveText(
        "It cannot succeed as it was asked: trying again would fail the same way.",
      );
      await expect(row.getByTestId("failure-next")).toContainText("change it and request it again");
      await expect(row.getByTestId("failure-cause")).toContainText("dataset");
      await t.shot("the failed export, filtered");
      await checkScreen(page, "/exports?status=failed");

      // Back undoes the filter; forward brings it back (the URL is the filter).
      await page.goBack();
      await expect(page).not.toHaveURL(/status=failed/);
      await expect(list.locator(`[data-job-id="${okId}"]`)).toBeVisible();
      await page.goForward();
      await expect(row).toBeVisible();

      // Re-run it: the form opens filled in as it was; the dataset it named is gone, so pick one.
      await t.click(row.getByRole("link", { name: "Request again" }));
      const form = page.getByRole("form", { name: "Request an export" });
      await expect(form.getByTestId("again-note")).toContainText("Filled in as the export of");
      await expect(form.getByLabel("Dataset")).toBeFocused();
      await form.getByLabel("Dataset").selectOption("customers");
      await t.shot("the form, filled in again");
      await checkScreen(page, "/exports?again=…");
      await t.click(form.getByRole("button", { name: "Request export" }));
      await expect(form.getByRole("status").filter({ hasText: "Export queued" })).toBeVisible();
      const again = (await form.getByRole("link", { name: "Follow it" }).getAttribute("href"))!.split("/").pop()!;
      expect(again).not.toBe(id);
      const newRow = page.locator(`[data-job-id="${again}"]`);
      await expect(newRow.getByTestId("job-status")).toHaveText("succeeded", { timeout: 120_000 });
      await expect(newRow.getByRole("link", { name: /Download/ })).toBeVisible();
      await t.shot("the export again, succeeded");
      const [stored] = await sql<{ status: string; dataset: string; email: string }>(
        `SELECT j.status::text AS status, j.input->>'dataset' AS dataset, u.email
           FROM jobs j JOIN users u ON u.id = j.created_by_id WHERE j.id = $1`,
        [again],
      );
      expect(stored).toEqual({ status: "succeeded", dataset: "customers", email });
      const clicks = await t.done();
      expect(clicks).toBeLessThanOrEqual(3);
    });

    test(`when does my schedule run next, in my zone (${name})`, async ({ browser }, info) => {
      test.setTimeout(180_000);
      // The reader is in New York; the schedule runs on Tokyo's clock (UTC+9, no summer time).
      const context = await browser.newContext({
        viewport,
        timezoneId: "America/New_York",
        storageState: "test-results/.auth/ada@acme.test.json",
      });
      const page = await context.newPage();
      const scheduleName = `e2e tokyo ${name} ${Date.now()}`;
      let id: string | null = null;
      try {
        const t = task(page, info, "when does my schedule run next, in my zone");
        await page.goto("/schedules");
        await expect(page.getByRole("heading", { name: "Schedules", level: 1 })).toBeVisible();
        await t.click(page.getByRole("link", { name: "New schedule" }));
        const form = page.getByRole("form", { name: "New schedule" });
        await expect(form.getByRole("textbox", { name: "Name" })).toBeFocused();
        await form.getByRole("textbox", { name: "Name" }).fill(scheduleName);
        await form.getByLabel("Repeat").selectOption("daily");
        await form.getByLabel("Time zone").selectOption("Asia/Tokyo");
        await form.getByLabel("Dataset").selectOption("customers");
        await t.shot("the new schedule's form");
        await checkScreen(page, "/schedules?new=1");
        await t.click(form.getByRole("button", { name: "Create schedule" }));
        await t.click(form.getByRole("link", { name: "Open it" }));
        await expect(page.getByRole("heading", { name: scheduleName, level: 1 })).toBeVisible();
        id = page.url().split("/").pop()!;

        const [row] = await sql<{ cron: string; timezone: string }>(
          "SELECT cron, timezone FROM schedules WHERE id = $1",
          [id],
        );
        expect(row).toEqual({ cron: "0 9 * * *", timezone: "Asia/Tokyo" });

        // Expected: the next five 09:00s in Tokyo are the next five midnights UTC (computed here,
        // not by the app's formatter), read on Tokyo's clock and on New York's.
        const next: Date[] = [];
        const now = Date.now();
        let at = Date.UTC(new Date(now).getUTCFullYear(), new Date(now).getUTCMonth(), new Date(now).getUTCDate() + 1);
        while (next.length < 5) {
          next.push(new Date(at));
          at += 86_400_000;
        }
        const clock = (d: Date, timeZone: string) => {
          const p = Object.fromEntries(
            new Intl.DateTimeFormat("en-GB", {
              timeZone,
              weekday: "short",
              day: "numeric",
              month: "short",
              hour: "2-digit",
              minute: "2-digit",
              hourCycle: "h23",
            })
              .formatToParts(d)
              .map((x) => [x.type, x.value]),
          );
          return { day: `${p.weekday} ${p.day} ${p.month}`, time: `${p.hour}:${p.minute}` };
        };
        const nyOffset = (d: Date) =>
          new Intl.DateTimeFormat("en-US", { timeZone: "America/New_York", timeZoneName: "shortOffset" })
            .formatToParts(d)
            .find((x) => x.type === "timeZoneName")!
            .value.replace("GMT", "UTC");

        const runs = page.getByTestId("next-run");
        await expect(runs).toHaveCount(5);
        for (const [i, d] of next.entries()) {
          const run = runs.nth(i);
          await expect(run.locator("time")).toHaveAttribute("datetime", d.toISOString());
          const tokyo = clock(d, "Asia/Tokyo");
          const ny = clock(d, "America/New_York");
          expect(tokyo.time).toBe("09:00");
          await expect(run.locator("time")).toHaveText(new RegExp(`^${tokyo.day}( \\d{4})?, 09:00 UTC\\+9$`));
          await expect(run).toContainText(new RegExp(`${ny.day}( \\d{4})?, ${ny.time} ${nyOffset(d)} your time`));
        }
        await t.shot("the schedule's next runs, both clocks");
        await checkScreen(page, "/schedules/[id]");

        // The list says the same next run, on both clocks.
        await page.goto("/schedules");
        const listed = page.locator(`[data-schedule-id="${id}"]`);
        await expect(listed.locator("time").first()).toHaveAttribute("datetime", next[0]!.toISOString());
        await expect(listed).toContainText(
          `${clock(next[0]!, "America/New_York").time} ${nyOffset(next[0]!)} your time`,
        );
        await t.shot("the schedules list");
        await checkScreen(page, "/schedules");
        const clicks = await t.done();
        expect(clicks).toBeLessThanOrEqual(3);
      } finally {
        if (id) expect((await page.request.delete(`/api/v1/schedules/${id}`)).status()).toBeLessThan(300);
        await context.close();
      }
    });
  });
}
