import type { APIRequestContext } from "@playwright/test";
import { expect, test } from "./fixtures";
import { cliToken, expectAccessible, sessionHeaders, sql, storageStateFor } from "./helpers";
import { WIDTHS, task } from "./task";

/**
 * An operator's task, walked as a person would at 1280 and 390 px: "who paused a queue, and
 * resume it". Another operator of Acme (Olive, invited here) has paused report jobs on Acme's
 * bulk queue; Oscar signs in, finds from where he lands who paused it, why and since when, and
 * resumes it. Each screen is checked with axe and attached as a screenshot; the clicks are counted.
 */

// One pause at a time: both widths pause the same scope (a second one would be refused as a duplicate).
test.describe.configure({ mode: "serial" });

// A scope no other spec uses: report jobs on the bulk queue, of Acme only.
const SCOPE = { queue: "bulk", type: "job_report", tenant: "acme" } as const;

const olive = `olive-${Date.now()}@acme.test`;
let other: APIRequestContext;
test.beforeAll(async ({ playwright }) => {
  // Another operator of Acme: invited by root (inviting needs a browser session), joined, with an API token.
  const base = test.info().project.use.baseURL!;
  const invite = await fetch(`${base}/api/v1/invites`, {
    method: "POST",
    headers: sessionHeaders("root@conveyor.test", base),
    body: JSON.stringify({ email: olive, tenant: "acme", role: "operator" }),
  });
  expect(invite.status, await invite.clone().text()).toBe(201);
  const { link } = (await invite.json()) as { link: string };
  const accepted = await fetch(`${base}/api/v1/invites/accept`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ token: link.split("/invite/")[1], name: "Olive", password: "olive's long password" }),
  });
  expect(accepted.status).toBe(200);
  other = await playwright.request.newContext({
    baseURL: base,
    extraHTTPHeaders: { Authorization: `Bearer ${cliToken(olive)}` },
  });
});
test.afterAll(async () => {
  await other?.dispose();
});

for (const { name, viewport } of WIDTHS) {
  test.describe(`at ${name} width`, () => {
    test.use({ viewport, storageState: storageStateFor("oscar@acme.test") });

    test("who paused a queue, and resume it", async ({ page }, info) => {
      test.setTimeout(90_000);
      const reason = `orders database migration ${name} ${Date.now()}`;
      const created = await other.post("/api/v1/ops/pauses", { data: { ...SCOPE, reason } });
      expect(created.status(), await created.text()).toBe(201);
      const pause = (await created.json()) as { id: string };
      const t = task(page, info, "who paused a queue, and resume it");
      try {
        // He lands on the console's overview.
        await page.goto("/");
        await expect(page).toHaveURL(/\/ops\/overview$/);
        await expect(page.getByRole("heading", { name: "Overview", level: 1 })).toBeVisible();
        const banner = page.getByTestId("overview-pause").filter({ hasText: reason });
        // Who, why and what it holds, on the first screen.
        await expect(banner).toContainText(olive);
        await expect(banner).toContainText(reason);
        await expect(banner).toContainText("queue bulk");
        await expect(banner).toContainText("type job_report");
        await expect(page.getByText(/^Loading/)).toHaveCount(0);
        await t.shot("the overview names the pause, who made it and why");
        await expectAccessible(page, `the overview at ${name} width with a pause`);

        await t.click(banner.getByRole("link", { name: "See it and resume" }));
        await expect(page).toHaveURL(new RegExp(`/ops/queues#pause-${pause.id}$`));
        const row = page.locator(`#pause-${pause.id}`);
        await expect(row).toBeVisible();
        await expect(row).toContainText(olive);
        await expect(row).toContainText(reason);
        await expect(page.getByText(/^Loading/)).toHaveCount(0);
        await t.shot("the pause on the Queues page, with Resume");
        await expectAccessible(page, `the Queues page at ${name} width with the pause`);

        await t.click(row.getByRole("button", { name: "Resume" }));
        await expect(page.locator(`#pause-${pause.id}`)).toHaveCount(0);
        await expect(page.getByRole("status").filter({ hasText: "Resumed" })).toContainText(reason);
        await t.shot("resumed");
        await expectAccessible(page, `the Queues page at ${name} width once resumed`);

        // Stored: resumed, by him.
        const [stored] = await sql<{ resumed: boolean; by: string | null }>(
          `SELECT p.resumed_at IS NOT NULL AS resumed, u.email AS by
             FROM queue_pauses p LEFT JOIN users u ON u.id = p.resumed_by_id WHERE p.id = $1`,
          [pause.id],
        );
        expect(stored).toEqual({ resumed: true, by: "oscar@acme.test" });
        // The overview no longer names it.
        await page.goto("/ops/overview");
        await expect(page.getByRole("heading", { name: "Overview", level: 1 })).toBeVisible();
        await expect(page.getByTestId("overview-pause").filter({ hasText: reason })).toHaveCount(0);
        expect(await t.done()).toBeLessThanOrEqual(2);
      } finally {
        await sql("UPDATE queue_pauses SET resumed_at = now() WHERE id = $1 AND resumed_at IS NULL", [pause.id]);
      }
    });
  });
}
