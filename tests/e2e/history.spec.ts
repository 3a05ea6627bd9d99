import type { Page } from "@playwright/test";
import { expect, test } from "./fixtures";
import { expectAccessible, sidewaysOverflow, sql, storageStateFor } from "./helpers";

// A member's own jobs of every kind on one page (/jobs, issue 35): an export she asked for at low
// priority and her schedule's run are listed with their priority, filters go to the URL and come
// back from it, another member's export is not there — at desktop width and on a 390 px phone.

test.use({ storageState: storageStateFor("ada@acme.test") });

async function made(page: Page): Promise<{ low: string; run: string; scheduleId: string; oscars: string }> {
  const res = await page.request.post("/api/v1/exports", { data: { dataset: "customers", priority: "low" } });
  expect(res.status()).toBe(202);
  const low = ((await res.json()) as { id: string }).id;
  const schedule = await page.request.post("/api/v1/schedules", {
    data: {
      name: `history ${Date.now()}`,
      cron: "0 3 * * *",
      task: "export",
      input: { dataset: "orders" },
      paused: true,
    },
  });
  expect(schedule.status()).toBe(201);
  const scheduleId = ((await schedule.json()) as { id: string }).id;
  const trigger = await page.request.post(`/api/v1/schedules/${scheduleId}/trigger`, { data: {} });
  expect(trigger.status()).toBe(202);
  const run = ((await trigger.json()) as { runs: string[] }).runs[0]!;
  // An export of oscar's, made in the database as his: never on ada's page.
  const [oscars] = await sql<{ id: string }>(
    `INSERT INTO jobs (id, tenant_id, type, queue, status, input, input_hash, created_by_id, updated_at)
     SELECT gen_random_uuid(), m.tenant_id, 'export', 'interactive', 'cancelled', '{"dataset":"events"}', 'e2e', u.id, now()
       FROM users u JOIN memberships m ON m.user_id = u.id WHERE u.email = 'oscar@acme.test' RETURNING id`,
  );
  return { low, run, scheduleId, oscars: oscars!.id };
}

for (const [name, viewport] of [
  ["desktop", { width: 1280, height: 900 }],
  ["phone", { width: 390, height: 844 }],
] as const) {
  test(`my jobs at ${name} width: every kind, its priority, filters in the URL`, async ({ page }) => {
    await page.setViewportSize(viewport);
    const ids = await made(page);
    try {
      await page.goto("/jobs");
      await expect(page.getByRole("heading", { name: "My jobs", level: 1 })).toBeVisible();
      const row = (id: string) => page.locator(`[data-testid="history-row"][data-job-id="${id}"]`);
      await expect(row(ids.low)).toBeVisible();
      await expect(row(ids.low).getByTestId("job-priority")).toHaveText("low priority");
      await expect(row(ids.run)).toBeVisible();
      await expect(row(ids.run).getByTestId("history-source")).toHaveText("a schedule");
      await expect(row(ids.oscars)).toHaveCount(0);
      const stored = await sql<{ priority: number }>(`SELECT priority FROM jobs WHERE id = $1`, [ids.low]);
      expect(stored[0]!.priority).toBe(10);
      const { over, culprits } = await sidewaysOverflow(page);
      expect(over, `/jobs scrolls sideways: ${culprits.join("; ")}`).toBeLessThanOrEqual(0);
      await expectAccessible(page, `/jobs at ${name} width`);

      // Filters go to the URL: a schedule's runs only.
      await page.getByLabel("Made by").selectOption("schedule");
      await page.getByLabel("Kind").selectOption("exports");
      await page.getByRole("button", { name: "Apply" }).click();
      await expect(page).toHaveURL(/[?&]source=schedule/);
      await expect(page).toHaveURL(/[?&]kind=exports/);
      await expect(row(ids.run)).toBeVisible();
      await expect(row(ids.low)).toHaveCount(0);

      // …and come back from it.
      await page.reload();
      await expect(page.getByLabel("Made by")).toHaveValue("schedule");
      await expect(row(ids.run)).toBeVisible();
      await expect(row(ids.low)).toHaveCount(0);

      // The job's page shows its priority.
      await page.goto(`/jobs/${ids.low}`);
      await expect(page.getByTestId("job-priority-text")).toHaveText("low priority");
    } finally {
      await page.request.delete(`/api/v1/schedules/${ids.scheduleId}`);
      await sql(`DELETE FROM jobs WHERE id = $1`, [ids.oscars]);
    }
  });
}
