import type { Page } from "@playwright/test";
import { expect, test } from "./fixtures";
import { confirmDialog, expectAccessible, sql, storageStateFor } from "./helpers";

/** Failed probe jobs of Acme with these error messages (and classes), newest last. */
async function deadProbes(messages: [string, string][]): Promise<string[]> {
  const ids: string[] = [];
  for (const [message, errorClass] of messages) {
    const [row] = await sql<{ id: string }>(
      `INSERT INTO jobs (id, tenant_id, type, queue, status, input, input_hash, attempts, max_attempts,
                         error_class, error_message, started_at, finished_at, updated_at)
       SELECT gen_random_uuid(), id, 'probe', 'bulk', 'failed', '{"sleepMs": 0}', 'e2e', 3, 3, $2, $1,
              now() - interval '5 seconds', now(), now()
       FROM tenants WHERE slug = 'acme' RETURNING id`,
      [message, errorClass],
    );
    ids.push(row!.id);
  }
  return ids;
}

/** The page is no wider than the viewport (the table scrolls inside its own box). */
async function expectNoPageScroll(page: Page, what: string): Promise<void> {
  const [scroll, viewport] = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
  expect(scroll, `${what}: page width at ${viewport} px`).toBeLessThanOrEqual(viewport);
}

/** The job ids the explorer lists, in order. */
const listedIds = (page: Page) =>
  page.getByTestId("ops-job-id").evaluateAll((links) => links.map((a) => a.getAttribute("title")));

test.describe("as oscar (operator)", () => {
  test.use({ storageState: storageStateFor("oscar@acme.test") });

  test("a bulk replay by filter: the count is confirmed, every matching job replays", async ({ page }) => {
    const marker = `explorer-e2e-${Date.now()}`;
    const dead = await sql<{ id: string }>(
      `INSERT INTO jobs (id, tenant_id, type, queue, status, input, input_hash, attempts, max_attempts,
                         error_class, error_message, finished_at, updated_at)
       SELECT gen_random_uuid(), t.id, 'probe', 'bulk', 'failed', '{"sleepMs": 0}', 'e2e', 3, 3, 'retryable',
              $1, now(), now()
       FROM tenants t, generate_series(1, 3) WHERE t.slug = 'acme' RETURNING id`,
      [`${marker}: connection reset`],
    );
    await page.goto("/ops/jobs");
    await page.getByLabel("Status").selectOption("failed");
    await page.getByLabel("Search input and errors").fill(marker);
    await page.getByRole("button", { name: "Apply filter" }).click();
    await expect(page.getByTestId("ops-job")).toHaveCount(3);

    await page.getByLabel("All jobs matching this filter").check();
    await page.getByRole("button", { name: "Replay", exact: true }).click();
    await confirmDialog(page, "Replay 3", { message: "Replay 3 of 3 jobs matching this filter?" });
    await expect(page.getByTestId("action-result")).toHaveText("Replay: 3 of 3 jobs");
    const ids = dead.map((d) => d.id);
    await expect
      .poll(
        async () =>
          (await sql("SELECT 1 FROM jobs WHERE replay_of_id = ANY($1::uuid[]) AND status = 'succeeded'", [ids])).length,
        { timeout: 30_000 },
      )
      .toBe(3);
    const [audit] = await sql<{ n: string }>(
      "SELECT count(*) AS n FROM audit_logs WHERE action = 'jobs.replay' AND target_ids && $1::text[]",
      [ids],
    );
    expect(Number(audit!.n)).toBe(1);
  });

  test("a job's page offers discard for a dead job and retry now for a waiting retry", async ({ page }) => {
    const [dead] = await sql<{ id: string }>(
      `INSERT INTO jobs (id, tenant_id, type, queue, status, input, input_hash, attempts, max_attempts,
                         error_class, error_message, finished_at, updated_at)
       SELECT gen_random_uuid(), id, 'probe', 'bulk', 'failed', '{"sleepMs": 0}', 'e2e', 3, 3, 'retryable', 'gone',
              now(), now() FROM tenants WHERE slug = 'acme' RETURNING id`,
    );
    await page.goto(`/jobs/${dead!.id}`);
    await page.getByRole("button", { name: "Discard" }).click();
    await confirmDialog(page, "Discard");
    await expect(page.getByRole("status").filter({ hasText: "Done." })).toBeVisible();
    expect((await sql("SELECT 1 FROM jobs WHERE id = $1 AND discarded_at IS NOT NULL", [dead!.id])).length).toBe(1);

    const [retrying] = await sql<{ id: string }>(
      `INSERT INTO jobs (id, tenant_id, type, queue, status, input, input_hash, attempts, max_attempts,
                         error_class, error_message, run_at, updated_at)
       SELECT gen_random_uuid(), id, 'probe', 'bulk', 'retrying', '{"sleepMs": 0}', 'e2e', 1, 5, 'retryable',
              'try later', now() + interval '1 hour', now() FROM tenants WHERE slug = 'acme' RETURNING id`,
    );
    await page.goto(`/jobs/${retrying!.id}`);
    await page.getByRole("button", { name: "Retry now" }).click();
    await expect(page.getByTestId("job-status")).toHaveText("succeeded", { timeout: 15_000 });
  });

  test("one selected job is cancelled; another tenant's jobs never appear", async ({ page }) => {
    const [job] = await sql<{ id: string }>(
      `INSERT INTO jobs (id, tenant_id, type, queue, status, input, input_hash, run_at, updated_at)
       SELECT gen_random_uuid(), id, 'probe', 'bulk', 'queued', '{"sleepMs": 0}', 'e2e', now() + interval '1 day', now()
       FROM tenants WHERE slug = 'acme' RETURNING id`,
    );
    await page.goto("/ops/jobs");
    await page.getByLabel(`Select job ${job!.id}`).check();
    await page.getByRole("button", { name: "Cancel", exact: true }).click();
    await confirmDialog(page, "Cancel 1");
    await expect(page.getByTestId("action-result")).toHaveText("Cancel: 1 of 1 jobs");
    expect((await sql<{ status: string }>("SELECT status FROM jobs WHERE id = $1", [job!.id]))[0]!.status).toBe(
      "cancelled",
    );
    const globex = await sql<{ id: string }>(
      "SELECT j.id FROM jobs j JOIN tenants t ON t.id = j.tenant_id WHERE t.slug = 'globex' LIMIT 20",
    );
    for (const g of globex) await expect(page.getByLabel(`Select job ${g.id}`)).toHaveCount(0);
  });

  test("a bulk cancel of 250 jobs by filter shows its progress and is audited with the filter", async ({ page }) => {
    const marker = `bulk-e2e-${Date.now()}`;
    const jobs = await sql<{ id: string }>(
      `INSERT INTO jobs (id, tenant_id, type, queue, status, input, input_hash, run_at, updated_at)
       SELECT gen_random_uuid(), t.id, 'probe', 'bulk', 'scheduled', jsonb_build_object('sleepMs', 0, 'tag', $1::text),
              'e2e', now() + interval '1 day', now()
       FROM tenants t, generate_series(1, 250) WHERE t.slug = 'acme' RETURNING id`,
      [marker],
    );
    await page.goto("/ops/jobs");
    await page.getByLabel("Search input and errors").fill(marker);
    await page.getByRole("button", { name: "Apply filter" }).click();
    await expect(page.getByTestId("ops-job")).toHaveCount(50);
    await page.getByLabel("All jobs matching this filter").check();
    await page.getByRole("button", { name: "Cancel", exact: true }).click();
    await confirmDialog(page, "Cancel 250", { message: "Cancel 250 of 250 jobs matching this filter?" });
    await expect(page.getByRole("progressbar", { name: "Cancel progress" })).toBeVisible();
    await expect(page.getByTestId("action-result")).toHaveText("Cancel: 250 of 250 jobs");
    const [left] = await sql<{ n: string }>(
      "SELECT count(*) AS n FROM jobs WHERE id = ANY($1::uuid[]) AND status <> 'cancelled'",
      [jobs.map((j) => j.id)],
    );
    expect(Number(left!.n)).toBe(0);
    const audit = await sql<{ q: string; n: number }>(
      `SELECT details->'filter'->>'q' AS q, cardinality(target_ids) AS n FROM audit_logs
       WHERE action = 'jobs.cancel' AND target_ids && $1::text[] ORDER BY id`,
      [jobs.map((j) => j.id)],
    );
    expect(audit.map((a) => [a.q, a.n])).toEqual([
      [marker, 100],
      [marker, 100],
      [marker, 50],
    ]);
  });

  test("filters live in the URL: Back restores the previous filters and jobs, a reload keeps them", async ({
    page,
  }) => {
    const marker = `url-e2e-${Date.now()}`;
    const [failed] = await deadProbes([[`${marker}: broke`, "permanent"]]);
    const [waiting] = await sql<{ id: string }>(
      `INSERT INTO jobs (id, tenant_id, type, queue, status, input, input_hash, run_at, updated_at)
       SELECT gen_random_uuid(), id, 'probe', 'bulk', 'scheduled', jsonb_build_object('sleepMs', 0, 'tag', $1::text),
              'e2e', now() + interval '1 day', now() FROM tenants WHERE slug = 'acme' RETURNING id`,
      [marker],
    );
    await page.goto("/ops/jobs");
    await page.getByLabel("Search input and errors").fill(marker);
    await page.getByRole("button", { name: "Apply filter" }).click();
    await expect(page).toHaveURL(new RegExp(`[?&]q=${marker}$`));
    await expect.poll(() => listedIds(page)).toEqual([waiting!.id, failed]);

    await page.getByLabel("Status").selectOption("failed");
    await page.getByRole("button", { name: "Apply filter" }).click();
    await expect(page).toHaveURL(/status=failed/);
    await expect.poll(() => listedIds(page)).toEqual([failed]);

    await page.goBack();
    await expect(page).not.toHaveURL(/status=/);
    await expect(page.getByLabel("Status")).toHaveValue("");
    await expect(page.getByLabel("Search input and errors")).toHaveValue(marker);
    await expect.poll(() => listedIds(page)).toEqual([waiting!.id, failed]);

    await page.goForward();
    await expect(page.getByLabel("Status")).toHaveValue("failed");
    await expect.poll(() => listedIds(page)).toEqual([failed]);
    await page.reload();
    await expect(page.getByLabel("Status")).toHaveValue("failed");
    await expect(page.getByLabel("Search input and errors")).toHaveValue(marker);
    await expect.poll(() => listedIds(page)).toEqual([failed]);
    await sql("UPDATE jobs SET discarded_at = now() WHERE id = $1", [failed]);
  });

  test("a row shows its id, type and dataset, requester and duration; parts only with Show parts", async ({ page }) => {
    const marker = `parts-e2e-${Date.now()}`;
    const request = { dataset: "events", format: "csv", compression: "gzip", note: marker };
    // Two days old: never the newest export of Acme's export list, which other tests read.
    const [parent] = await sql<{ id: string }>(
      `INSERT INTO jobs (id, tenant_id, type, queue, status, input, input_hash, created_by_id,
                         created_at, started_at, finished_at, updated_at)
       SELECT gen_random_uuid(), t.id, 'export', 'bulk', 'succeeded', $1::jsonb, 'e2e', u.id,
              now() - interval '2 days', now() - interval '2 days', now() - interval '2 days' + interval '90 seconds', now()
       FROM tenants t, users u WHERE t.slug = 'acme' AND u.email = 'oscar@acme.test' RETURNING id`,
      [JSON.stringify(request)],
    );
    const parts = await sql<{ id: string }>(
      `INSERT INTO jobs (id, tenant_id, type, queue, status, input, input_hash, parent_id, child_index,
                         created_at, started_at, finished_at, updated_at)
       SELECT gen_random_uuid(), t.id, 'export_part', 'bulk', 'succeeded',
              jsonb_build_object('exportId', $1::text, 'request', $2::jsonb, 'range', '{"from": 1, "to": 2}'::jsonb,
                                 'part', n, 'parts', 2),
              'e2e', $1::uuid, n - 1, now() - interval '2 days', now() - interval '2 days',
              now() - interval '2 days' + interval '30 seconds', now()
       FROM tenants t, generate_series(1, 2) n WHERE t.slug = 'acme' RETURNING id`,
      [parent!.id, JSON.stringify(request)],
    );
    await page.goto(`/ops/jobs?q=${marker}`);
    await expect.poll(() => listedIds(page)).toEqual([parent!.id]);
    const row = page.getByTestId("ops-job");
    await expect(row.getByTestId("ops-job-id")).toHaveText(`…${parent!.id.slice(-8)}`);
    await expect(row.getByTestId("ops-job-id")).toHaveAttribute("href", `/jobs/${parent!.id}`);
    await expect(row.getByTestId("ops-job-type")).toContainText("export · events · csv.gz");
    await expect(row.getByTestId("ops-job-requester")).toHaveText("oscar@acme.test");
    await expect(row.getByTestId("ops-job-duration")).toHaveText("1m 30s");
    await expect(row.getByRole("button", { name: "Copy id" })).toBeVisible();

    await expect(page.getByLabel("Show parts")).not.toBeChecked();
    await page.getByLabel("Show parts").check();
    await expect(page).toHaveURL(/children=1/);
    await expect
      .poll(async () => (await listedIds(page)).sort())
      .toEqual([parent!.id, ...parts.map((p) => p.id)].sort());
    const part = page.getByTestId("ops-job").filter({ hasText: "part 1 of 2" });
    await expect(part.getByTestId("ops-job-type")).toContainText("export_part · events · csv.gz · part 1 of 2");
    await expect(part.getByTestId("ops-job-requester")).toHaveText("its parent job");

    await page.goBack();
    await expect(page.getByLabel("Show parts")).not.toBeChecked();
    await expect.poll(() => listedIds(page)).toEqual([parent!.id]);
  });

  test("select all on this page selects the page's rows, and the bulk action takes them", async ({ page }) => {
    const marker = `all-e2e-${Date.now()}`;
    const jobs = await sql<{ id: string }>(
      `INSERT INTO jobs (id, tenant_id, type, queue, status, input, input_hash, run_at, updated_at)
       SELECT gen_random_uuid(), t.id, 'probe', 'bulk', 'scheduled', jsonb_build_object('sleepMs', 0, 'tag', $1::text),
              'e2e', now() + interval '1 day', now()
       FROM tenants t, generate_series(1, 3) WHERE t.slug = 'acme' RETURNING id`,
      [marker],
    );
    await page.goto(`/ops/jobs?q=${marker}`);
    await expect(page.getByTestId("ops-job")).toHaveCount(3);
    const all = page.getByLabel("Select all on this page");
    await all.check();
    for (const j of jobs) await expect(page.getByLabel(`Select job ${j.id}`)).toBeChecked();
    await expect(page.getByTestId("selected-count")).toHaveText("3 selected");

    await page.getByLabel(`Select job ${jobs[0]!.id}`).uncheck();
    await expect(all).not.toBeChecked();
    expect(await all.evaluate((el) => (el as HTMLInputElement).indeterminate)).toBe(true);
    await all.check();
    expect(await all.evaluate((el) => (el as HTMLInputElement).indeterminate)).toBe(false);
    await expect(page.getByTestId("selected-count")).toHaveText("3 selected");

    await page.getByRole("button", { name: "Cancel", exact: true }).click();
    await confirmDialog(page, "Cancel 3", { message: "Cancel 3 of 3 selected jobs?" });
    await expect(page.getByTestId("action-result")).toHaveText("Cancel: 3 of 3 jobs");
    const [left] = await sql<{ n: string }>(
      "SELECT count(*) AS n FROM jobs WHERE id = ANY($1::uuid[]) AND status <> 'cancelled'",
      [jobs.map((j) => j.id)],
    );
    expect(Number(left!.n)).toBe(0);
    await expect(page.getByTestId("selected-count")).toHaveText("0 selected");
  });

  test("a dead-letter group's link lists only that group's jobs; its fingerprint is a removable chip", async ({
    page,
  }) => {
    const marker = `fp-e2e-${Date.now()}`;
    const [a, b, otherClass, otherMessage] = await deadProbes([
      [`${marker}: timed out after 3012 ms on row 17`, "timeout"],
      [`${marker}: timed out after 2988 ms on row 4`, "timeout"],
      [`${marker}: timed out after 15 ms on row 9`, "crashed"],
      [`${marker}: connection reset by peer`, "timeout"],
    ]);
    const [{ fp }] = (await sql<{ fp: string }>("SELECT error_fingerprint AS fp FROM jobs WHERE id = $1", [a])) as [
      { fp: string },
    ];
    const group = new URLSearchParams({
      status: "failed",
      type: "probe",
      errorClass: "timeout",
      fingerprint: fp,
      dead: "1",
      children: "1",
    });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`/ops/jobs?${group}`);
    await expect.poll(() => listedIds(page)).toEqual([b, a]);
    await expect(page.getByTestId("filter-chip-fingerprint")).toContainText(fp);
    await expect(page.getByTestId("filter-chip-errorClass")).toContainText("timeout");
    await expectNoPageScroll(page, "/ops/jobs with a fingerprint at phone width");
    await expectAccessible(page, "/ops/jobs with a dead-letter group's filters");

    await page.getByRole("button", { name: `Remove filter Fingerprint: ${fp}` }).click();
    await expect(page).not.toHaveURL(/fingerprint=/);
    await expect(page.getByTestId("filter-chip-fingerprint")).toHaveCount(0);
    await expect(page.getByLabel(`Select job ${otherMessage}`)).toBeVisible();
    await expect(page.getByLabel(`Select job ${otherClass}`)).toHaveCount(0);
    await page.goBack();
    await expect.poll(() => listedIds(page)).toEqual([b, a]);
    await sql("UPDATE jobs SET discarded_at = now() WHERE id = ANY($1::uuid[])", [[a, b, otherClass, otherMessage]]);
  });
});

test.describe("as oscar (operator), in New York", () => {
  test.use({ storageState: storageStateFor("oscar@acme.test"), timezoneId: "America/New_York" });

  test("dates say their zone and mean its midnights; a bad range is caught next to 'To', an API refusal in an alert", async ({
    page,
  }) => {
    await page.goto("/ops/jobs");
    await expect(page.getByText("Dates in America/New_York")).toBeVisible();
    const to = page.getByLabel("To", { exact: true });
    await page.getByLabel("From", { exact: true }).fill("2026-03-10");
    await to.fill("2026-03-01");
    await page.getByRole("button", { name: "Apply filter" }).click();
    const message = page.locator("#jobs-filter-to-error");
    await expect(message).toHaveText("'To' must be on or after 'From'");
    await expect(to).toHaveAttribute("aria-invalid", "true");
    await expect(to).toHaveAttribute("aria-describedby", /jobs-filter-to-error/);
    await expect(page).not.toHaveURL(/from=/);

    // Fixed: the dates are New York's midnights (daylight saving time from 8 March): the 10th, all of it.
    await to.fill("2026-03-10");
    await expect(message).toHaveCount(0);
    await expect(to).not.toHaveAttribute("aria-invalid");
    // The filter's own request: a live reload of the list (another job's event) may go out first.
    const sent = page.waitForRequest((r) => r.url().includes("/api/v1/ops/jobs?") && r.url().includes("from="));
    await page.getByRole("button", { name: "Apply filter" }).click();
    const url = new URL((await sent).url());
    expect([url.searchParams.get("from"), url.searchParams.get("to")]).toEqual([
      "2026-03-10T04:00:00.000Z",
      "2026-03-11T04:00:00.000Z",
    ]);
    await expect(page).toHaveURL(/from=2026-03-10&to=2026-03-10/);

    // A range the API refuses (from a hand-made link): its message in an alert, not in a label.
    await page.goto("/ops/jobs?from=2026-03-10T00:00:00Z&to=2026-03-01T00:00:00Z");
    await expect(page.locator("main").getByRole("alert")).toContainText("to: must be after from");
    await expect(page.locator("label", { hasText: "must be after" })).toHaveCount(0);
    await expect(page.getByTestId("filter-chip-from")).toBeVisible();
  });
});
