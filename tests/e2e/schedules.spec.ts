import { execFileSync } from "node:child_process";
import type { APIRequestContext, Page } from "@playwright/test";
import { expect, test } from "./fixtures";
import { cliToken, confirmDialog, sql, sqlCount, storageStateFor } from "./helpers";

/** A schedule made through the API (paused unless told, so it never fires by itself). */
async function makeSchedule(
  api: APIRequestContext,
  name: string,
  extra: Record<string, unknown> = {},
): Promise<{ id: string; name: string }> {
  const res = await api.post("/api/v1/schedules", {
    data: {
      name,
      cron: "0 3 * * *",
      timezone: "UTC",
      task: "export",
      input: { dataset: "customers", format: "csv", compression: "none" },
      paused: true,
      ...extra,
    },
  });
  expect(res.status(), await res.text()).toBe(201);
  return (await res.json()) as { id: string; name: string };
}

/** Deletes a schedule if it is still there (its waiting runs are cancelled with it). */
async function dropSchedule(api: APIRequestContext, id: string): Promise<void> {
  const res = await api.delete(`/api/v1/schedules/${id}`);
  expect([200, 404]).toContain(res.status());
}

/** The real CLI, as `npm run cli -- …` runs it: its standard output. */
function cli(...args: string[]): string {
  return execFileSync(process.execPath, ["--import", "tsx", "scripts/cli.ts", ...args], {
    env: process.env,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });
}

/** The browser's clock `ms` from now, as a datetime-local input takes it. */
function localInput(page: Page, ms: number): Promise<string> {
  return page.evaluate((ahead) => {
    const d = new Date(Date.now() + ahead);
    const p = (n: number) => String(n).padStart(2, "0");
    return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
  }, ms);
}

test.describe("as ada (Acme member)", () => {
  test.use({ storageState: storageStateFor("ada@acme.test") });

  test("a schedule's runs say so on /exports, linked to it, and the list filters to one schedule in the URL", async ({
    page,
  }) => {
    const s = await makeSchedule(page.request, `e2e source ${Date.now()}`);
    try {
      const trigger = await page.request.post(`/api/v1/schedules/${s.id}/trigger`);
      expect(trigger.status()).toBeLessThan(300);
      const run = ((await trigger.json()) as { runs: string[] }).runs[0]!;
      const manual = await page.request.post("/api/v1/exports", { data: { dataset: "customers" } });
      const manualId = ((await manual.json()) as { id: string }).id;

      await page.goto("/exports");
      const list = page.getByRole("list", { name: "Exports, newest first" });
      const runRow = list.locator(`[data-job-id="${run}"]`);
      await expect(runRow.getByTestId("export-source")).toHaveText(`schedule: ${s.name}`);
      await expect(list.locator(`[data-job-id="${manualId}"]`).getByTestId("export-source")).toHaveText(
        "by ada@acme.test",
      );
      await expect(runRow.getByRole("link", { name: s.name })).toHaveAttribute("href", `/schedules/${s.id}`);

      // One schedule's runs: the choice is the URL's, shareable as it is.
      await page.getByLabel("Requested by").selectOption(s.id);
      await expect(page).toHaveURL(new RegExp(`[?&]source=${s.id}(&|$)`));
      await expect(list.locator(`[data-job-id="${manualId}"]`)).toHaveCount(0);
      await expect(list.getByTestId("export-row")).toHaveCount(1);
      await expect(runRow).toBeVisible();
      await page.reload();
      await expect(page.getByLabel("Requested by")).toHaveValue(s.id);
      await expect(list.getByTestId("export-row")).toHaveCount(1);
      // People's exports only; then a dataset no export of this schedule has: an empty list that says why.
      await page.getByLabel("Requested by").selectOption("manual");
      await expect(list.locator(`[data-job-id="${manualId}"]`)).toBeVisible();
      await expect(list.locator(`[data-job-id="${run}"]`)).toHaveCount(0);
      await page.goBack();
      await expect(page.getByLabel("Requested by")).toHaveValue(s.id);
      await page.getByLabel("Dataset").selectOption("events");
      await expect(page.getByTestId("exports-empty")).toHaveText("No exports match these filters.");
      await page.getByRole("link", { name: "Clear filters" }).click();
      await expect(page).toHaveURL(/\/exports$/);
      await expect(runRow).toBeVisible();
    } finally {
      await dropSchedule(page.request, s.id);
    }
  });

  test("makes an every-2-seconds orders export, watches its runs succeed, pauses, resumes, runs it now and deletes it", async ({
    page,
  }) => {
    test.setTimeout(180_000);
    const name = `e2e every 2s ${Date.now()}`;
    let id: string | null = null;
    try {
      await page.goto("/exports");
      await page.getByRole("link", { name: "Schedules", exact: true }).click();
      await expect(page.getByRole("heading", { name: "Schedules", level: 1 })).toBeVisible();
      // The list first; New schedule opens the form with the focus on its name.
      await page.getByRole("link", { name: "New schedule" }).click();
      const form = page.getByRole("form", { name: "New schedule" });
      await expect(form.getByRole("textbox", { name: "Name" })).toBeFocused();
      await form.getByRole("textbox", { name: "Name" }).fill(name);
      await form.getByLabel("Repeat").selectOption("custom");
      await form.getByLabel("Cron expression").fill("*/2 * * * * *");
      await form.getByLabel("Time zone").selectOption("UTC");
      await form.getByLabel("Dataset").selectOption("orders");
      await form.getByLabel("Only rows since the last run").check();

      // The preview, computed in the browser: five runs two seconds apart, in UTC.
      const preview = form.getByRole("region", { name: "Preview" });
      await expect(preview).toContainText("Every 2 seconds");
      await expect(preview).toContainText("(UTC)");
      await expect(preview.getByTestId("preview-run")).toHaveCount(5);
      await expect(form.getByTestId("cron-error")).toHaveCount(0);

      await form.getByRole("button", { name: "Create schedule" }).click();
      await expect(form.getByRole("status")).toContainText(`Schedule “${name}” created`);
      const [row] = await sql<{ id: string; cron: string; timezone: string; input: { filter?: { since?: string } } }>(
        "SELECT id, cron, timezone, input FROM schedules WHERE name = $1",
        [name],
      );
      id = row!.id;
      expect(row).toMatchObject({ cron: "*/2 * * * * *", timezone: "UTC" });
      expect(row!.input.filter).toEqual({ since: "lastRun" });

      // The list shows it, with its cron in words and a next run.
      const listed = page.locator(`[data-schedule-id="${id}"]`);
      await expect(listed).toContainText("Every 2 seconds");
      await expect(listed.getByTestId("schedule-state")).toHaveText("active");

      // Its page: runs appear in the history by themselves, and succeed.
      await form.getByRole("link", { name: "Open it" }).click();
      await expect(page.getByRole("heading", { name, level: 1 })).toBeVisible();
      await expect(page.getByTestId("next-run")).toHaveCount(5);
      const history = page.getByRole("region", { name: "History" });
      await expect(history.locator('[data-testid="history-run"][data-status="succeeded"]').first()).toBeVisible({
        timeout: 90_000,
      });
      await expect(page.getByTestId("last-run-status")).toBeVisible();
      // One run per occurrence, never two.
      expect(
        await sqlCount(
          `SELECT count(*) AS n FROM (SELECT scheduled_for FROM schedule_runs WHERE schedule_id = $1
             GROUP BY scheduled_for HAVING count(*) > 1) d`,
          [id],
        ),
      ).toBe(0);

      // Paused: no run for any time after the pause.
      await page.getByRole("button", { name: "Pause", exact: true }).click();
      await expect(page.getByTestId("schedule-state")).toHaveText("paused");
      await expect(page.getByRole("heading", { name: "Next runs once resumed" })).toBeVisible();
      await page.waitForTimeout(5_000);
      expect(
        await sqlCount(
          "SELECT count(*) AS n FROM schedule_runs j JOIN schedules s ON s.id = j.schedule_id WHERE s.id = $1 AND j.scheduled_for > s.paused_at",
          [id],
        ),
      ).toBe(0);

      // Resumed: runs again, for times after the resume.
      const resumedAt = new Date();
      await page.getByRole("button", { name: "Resume", exact: true }).click();
      await expect(page.getByTestId("schedule-state")).toHaveText("active");
      await expect
        .poll(
          () =>
            sqlCount("SELECT count(*) AS n FROM schedule_runs WHERE schedule_id = $1 AND scheduled_for > $2", [
              id,
              resumedAt,
            ]),
          { timeout: 30_000 },
        )
        .toBeGreaterThan(0);

      // Run now: a run for this instant, in the history with a link to its job.
      await page.getByRole("button", { name: "Run now" }).click();
      const notice = page.getByTestId("schedule-notice");
      await expect(notice).toContainText("Run started");
      const jobId = (await notice.getByRole("link", { name: "Follow the run" }).getAttribute("href"))!
        .split("/")
        .pop()!;
      await expect(history.locator(`a[href="/jobs/${jobId}"]`)).toBeVisible();
      const [triggered] = await sql<{ schedule_id: string; type: string }>(
        "SELECT r.schedule_id, j.type FROM jobs j JOIN schedule_runs r ON r.job_id = j.id WHERE j.id = $1",
        [jobId],
      );
      expect(triggered).toEqual({ schedule_id: id, type: "export" });

      // Deleted: gone from the list; its finished runs are kept.
      const runs = await sql<{ id: string }>("SELECT job_id AS id FROM schedule_runs WHERE schedule_id = $1", [id]);
      await page.getByRole("button", { name: "Delete", exact: true }).click();
      await confirmDialog(page, "Delete schedule");
      await expect(page).toHaveURL(/\/schedules$/);
      await expect(page.locator(`[data-schedule-id="${id}"]`)).toHaveCount(0);
      expect(await sqlCount("SELECT count(*) AS n FROM schedules WHERE id = $1", [id])).toBe(0);
      expect(
        await sqlCount("SELECT count(*) AS n FROM jobs WHERE id = ANY($1::uuid[]) AND status = 'succeeded'", [
          runs.map((r) => r.id),
        ]),
      ).toBeGreaterThan(0);
      id = null;
    } finally {
      if (id) await dropSchedule(page.request, id);
    }
  });

  test("a bad cron expression is named next to the cron field, by the preview and by the API", async ({ page }) => {
    await page.goto("/schedules?new=1");
    const form = page.getByRole("form", { name: "New schedule" });
    await form.getByRole("textbox", { name: "Name" }).fill(`e2e bad cron ${Date.now()}`);
    // Spreadsheet safety is offered with CSV (ticked by default), not with JSON Lines.
    await expect(form.getByLabel(/Spreadsheet-safe CSV/)).toBeChecked();
    await form.getByLabel("Format").selectOption("jsonl");
    await expect(form.getByLabel(/Spreadsheet-safe CSV/)).toHaveCount(0);
    await form.getByLabel("Format").selectOption("csv");
    await expect(form.getByLabel(/Spreadsheet-safe CSV/)).toBeChecked();
    await form.getByLabel("Repeat").selectOption("custom");
    const cron = form.getByLabel("Cron expression");
    await cron.fill("*/2 * * *");
    const error = form.getByTestId("cron-error");
    await expect(error).toContainText("must have 5 fields");
    await expect(cron).toHaveAttribute("aria-invalid", "true");
    await expect(cron).toHaveAttribute("aria-describedby", new RegExp(`${await error.getAttribute("id")}`));
    await expect(form.getByRole("region", { name: "Preview" }).getByTestId("preview-run")).toHaveCount(0);

    // A cron croner refuses: the server's answer is shown at the same place.
    await cron.fill("61 * * * *");
    await expect(error).toBeVisible();
    await form.getByRole("button", { name: "Create schedule" }).click();
    await expect(form.getByRole("alert")).toContainText("Check the fields marked above");
    await expect(error).toBeVisible();
    const res = await page.request.post("/api/v1/schedules", {
      data: { name: "e2e bad cron api", cron: "61 * * * *", task: "export", input: { dataset: "orders" } },
    });
    expect(res.status()).toBe(400);
    const body = (await res.json()) as { error: { fields: { path: string }[] } };
    expect(body.error.fields.map((f) => f.path)).toContain("cron");
    expect(await sqlCount("SELECT count(*) AS n FROM schedules WHERE name LIKE 'e2e bad cron%'")).toBe(0);
  });

  test("another tenant's schedule is not found, on its page and in the API", async ({ page, playwright }) => {
    const gus = await playwright.request.newContext({
      baseURL: test.info().project.use.baseURL,
      extraHTTPHeaders: { Authorization: `Bearer ${cliToken("gus@globex.test")}` },
    });
    const theirs = await makeSchedule(gus, `e2e globex ${Date.now()}`);
    try {
      const res = await page.goto(`/schedules/${theirs.id}`);
      expect(res?.status()).toBe(404);
      await expect(page.getByRole("heading", { name: "Not found" })).toBeVisible();
      expect((await page.request.get(`/api/v1/schedules/${theirs.id}`)).status()).toBe(404);
      expect((await page.request.post(`/api/v1/schedules/${theirs.id}/trigger`)).status()).toBe(404);
      await page.goto("/schedules");
      await expect(page.getByText("Loading schedules…")).toHaveCount(0);
      await expect(page.locator(`[data-schedule-id="${theirs.id}"]`)).toHaveCount(0);
    } finally {
      await dropSchedule(gus, theirs.id);
      await gus.dispose();
    }
  });

  test("a delayed export shows as scheduled, then runs at its time; another is cancelled before it starts", async ({
    page,
  }) => {
    await page.goto("/exports?new=1");
    const form = page.getByRole("form", { name: "Request an export" });
    await form.getByLabel("Dataset").selectOption("customers");
    await form.getByLabel("Run later").check();
    const runAt = await localInput(page, 6_000);
    await form.getByLabel("Start at").fill(runAt);
    await form.getByRole("button", { name: "Schedule export" }).click();
    await expect(form.getByRole("status")).toContainText("Export scheduled for");
    const jobId = (await form.getByRole("link", { name: "Follow it" }).getAttribute("href"))!.split("/").pop()!;
    const row = page.locator(`[data-job-id="${jobId}"]`);
    await expect(row.getByTestId("job-status")).toHaveText("scheduled");
    await expect(row.getByTestId("progress-text")).toContainText("Scheduled for");
    await expect(row.getByRole("button", { name: "Cancel job" })).toBeVisible();
    // Then it starts by itself, at its time, and succeeds (live, no reload).
    await expect(row.getByTestId("job-status")).toHaveText("succeeded", { timeout: 60_000 });
    const [job] = await sql<{ run_at: Date; started_at: Date }>("SELECT run_at, started_at FROM jobs WHERE id = $1", [
      jobId,
    ]);
    expect(job!.started_at.getTime()).toBeGreaterThanOrEqual(job!.run_at.getTime());

    // An hour ahead: cancelled while it waits.
    await form.getByLabel("Start at").fill(await localInput(page, 3_600_000));
    await form.getByRole("button", { name: "Schedule export" }).click();
    const follow = form.getByRole("link", { name: "Follow it" });
    await expect(follow).not.toHaveAttribute("href", `/jobs/${jobId}`);
    const laterId = (await follow.getAttribute("href"))!.split("/").pop()!;
    const laterRow = page.locator(`[data-job-id="${laterId}"]`);
    await expect(laterRow.getByTestId("job-status")).toHaveText("scheduled");
    await laterRow.getByRole("button", { name: "Cancel job" }).click();
    await confirmDialog(page, "Cancel job");
    await expect(laterRow.getByTestId("job-status")).toHaveText("cancelled");
    const [cancelled] = await sql<{ status: string; started_at: Date | null }>(
      "SELECT status, started_at FROM jobs WHERE id = $1",
      [laterId],
    );
    expect(cancelled).toEqual({ status: "cancelled", started_at: null });
  });

  test("edits a schedule (its zone kept, next runs recomputed) and backfills three past days", async ({ page }) => {
    const s = await makeSchedule(page.request, `e2e edit ${Date.now()}`, { timezone: "Asia/Kolkata" });
    try {
      await page.goto(`/schedules/${s.id}`);
      await expect(page.getByRole("region", { name: "Settings" })).toContainText("Daily at 03:00");
      await page.getByRole("button", { name: "Edit" }).click();
      const form = page.getByRole("form", { name: "Edit the schedule" });
      // Chromium calls it Asia/Calcutta; the editor keeps the schedule's name for it.
      await expect(form.getByLabel("Time zone")).toHaveValue("Asia/Kolkata");
      await expect(form.getByLabel("Repeat")).toHaveValue("daily");
      await form.getByLabel("At", { exact: true }).fill("04:30");
      await expect(form.getByRole("region", { name: "Preview" })).toContainText("Daily at 04:30 (Asia/Kolkata)");
      await form.getByLabel("Overlap").selectOption("allow");
      await form.getByRole("button", { name: "Save changes" }).click();
      await expect(page.getByTestId("schedule-notice")).toContainText("Saved");
      await expect(form).toHaveCount(0);
      await expect(page.getByRole("region", { name: "Settings" })).toContainText("Daily at 04:30");
      const [row] = await sql<{ cron: string; timezone: string; overlap_policy: string }>(
        "SELECT cron, timezone, overlap_policy FROM schedules WHERE id = $1",
        [s.id],
      );
      expect(row).toEqual({ cron: "30 4 * * *", timezone: "Asia/Kolkata", overlap_policy: "allow" });
      // The next runs are at 04:30 in Kolkata (+05:30): 23:00 UTC.
      const next = (await (await page.request.get(`/api/v1/schedules/${s.id}`)).json()) as { nextRuns: string[] };
      expect(next.nextRuns[0]).toMatch(/T04:30:00\+05:30$/);

      // Backfill: one run for each of the three days before today.
      const backfill = page.getByRole("form", { name: "Backfill" });
      await backfill.getByLabel("From").fill(await localInput(page, -3 * 86_400_000 - 60_000));
      await backfill.getByLabel("To").fill(await localInput(page, -60_000));
      await backfill.getByRole("button", { name: "Backfill" }).click();
      await expect(backfill.getByTestId("backfill-result")).toContainText("3 time(s) in the range: 3 run(s) made");
      const history = page.getByRole("region", { name: "History" });
      await expect(history.getByTestId("history-run")).toHaveCount(3);
      expect(await sqlCount("SELECT count(*) AS n FROM schedule_runs WHERE schedule_id = $1", [s.id])).toBe(3);
    } finally {
      await dropSchedule(page.request, s.id);
    }
  });

  test("the CLI lists, pauses, resumes and runs a schedule as a given user", async ({ page }) => {
    test.setTimeout(120_000);
    const s = await makeSchedule(page.request, `e2e cli ${Date.now()}`, { paused: false });
    try {
      expect(cli("schedules", "list", "--email", "ada@acme.test")).toMatch(
        new RegExp(`${s.id}\\s+${s.name}\\s+0 3 \\* \\* \\*\\s+UTC\\s+active`),
      );
      expect(cli("schedules", "pause", s.id, "--email", "ada@acme.test")).toContain(`${s.name}: paused`);
      expect(await sqlCount("SELECT count(*) AS n FROM schedules WHERE id = $1 AND paused", [s.id])).toBe(1);
      expect(cli("schedules", "resume", s.id, "--email", "ada@acme.test")).toContain(`${s.name}: active, next run`);
      const run = cli("schedules", "trigger", s.id, "--email", "ada@acme.test").trim();
      expect(
        await sqlCount("SELECT count(*) AS n FROM schedule_runs WHERE job_id = $1 AND schedule_id = $2", [run, s.id]),
      ).toBe(1);
      // Another tenant's member does not find it.
      expect(() => cli("schedules", "pause", s.id, "--email", "gus@globex.test")).toThrow(/Schedule not found/);
      await page.goto(`/schedules/${s.id}`);
      await expect(page.getByRole("region", { name: "History" }).locator(`a[href="/jobs/${run}"]`)).toBeVisible();
    } finally {
      await dropSchedule(page.request, s.id);
    }
  });
});

test.describe("as oscar (Acme operator)", () => {
  test.use({ storageState: storageStateFor("oscar@acme.test") });

  test("the console lists Acme's schedules, not Globex's, and pauses one", async ({ page, playwright }) => {
    const ours = await makeSchedule(page.request, `e2e console ${Date.now()}`, { paused: false });
    const gus = await playwright.request.newContext({
      baseURL: test.info().project.use.baseURL,
      extraHTTPHeaders: { Authorization: `Bearer ${cliToken("gus@globex.test")}` },
    });
    const theirs = await makeSchedule(gus, `e2e console globex ${Date.now()}`);
    try {
      await page.goto("/exports");
      await page.getByRole("link", { name: "Tenant schedules", exact: true }).click();
      await expect(page.getByRole("heading", { name: "Tenant schedules", level: 1 })).toBeVisible();
      const row = page.locator(`[data-schedule-id="${ours.id}"]`);
      await expect(row).toContainText("Daily at 03:00");
      await expect(row.getByTestId("schedule-state")).toHaveText("active");
      await expect(page.locator(`[data-schedule-id="${theirs.id}"]`)).toHaveCount(0);
      await expect(page.getByRole("columnheader", { name: "Tenant" })).toHaveCount(0);

      await row.getByRole("button", { name: `Pause ${ours.name}` }).click();
      await expect(row.getByTestId("schedule-state")).toHaveText("paused");
      await expect(page.getByTestId("schedule-notice")).toContainText(`${ours.name}: Paused`);
      expect(await sqlCount("SELECT count(*) AS n FROM schedules WHERE id = $1 AND paused", [ours.id])).toBe(1);
      await expect(row.getByRole("button", { name: `Resume ${ours.name}` })).toBeVisible();
    } finally {
      await dropSchedule(page.request, ours.id);
      await dropSchedule(gus, theirs.id);
      await gus.dispose();
    }
  });
});

test.describe("as root (platform admin)", () => {
  test.use({ storageState: storageStateFor("root@conveyor.test") });

  test("the console lists every tenant's schedules, with their tenant", async ({ page, playwright }) => {
    const gus = await playwright.request.newContext({
      baseURL: test.info().project.use.baseURL,
      extraHTTPHeaders: { Authorization: `Bearer ${cliToken("gus@globex.test")}` },
    });
    const theirs = await makeSchedule(gus, `e2e admin globex ${Date.now()}`);
    try {
      await page.goto("/ops/schedules");
      const row = page.locator(`[data-schedule-id="${theirs.id}"]`);
      await expect(row).toContainText("globex");
      await page.getByRole("combobox", { name: "Tenant" }).selectOption("acme");
      await expect(row).toHaveCount(0);
      await page.getByRole("combobox", { name: "Tenant" }).selectOption("globex");
      await expect(row).toBeVisible();
    } finally {
      await dropSchedule(gus, theirs.id);
      await gus.dispose();
    }
  });
});
