import { randomUUID } from "node:crypto";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Page } from "@playwright/test";
import { expect, test } from "./fixtures";
import { confirmDialog, countCsvRecords, expectAccessible, sql, sqlCount, storageStateFor } from "./helpers";

/**
 * The Imports page: a real file sent over tus from the browser, its five stages
 * followed live, the bad rows and the errors file; a dropped connection and a
 * reloaded page resume the upload instead of restarting it.
 */

/** `rows` events (header `type,source,message,occurred_at`), every message carrying `tag`; rows `bad` get a broken time. */
function eventsCsv(tag: string, rows: number, bad: number[] = []): string {
  const lines = ["type,source,message,occurred_at"];
  for (let i = 1; i <= rows; i++) {
    const at = bad.includes(i) ? "not-a-time" : `2026-01-0${1 + (i % 9)}T10:00:00Z`;
    lines.push(`signup,web,"${tag} row ${i}, with a comma",${at}`);
  }
  return `${lines.join("\n")}\n`;
}

/** Writes `text` to a file of its own (a path keeps its modified time: tus fingerprints the file by it). */
async function fileWith(name: string, text: string): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), "conveyor-import-e2e-"));
  const file = path.join(dir, name);
  await writeFile(file, text);
  return file;
}

async function pickFile(page: Page, file: string): Promise<void> {
  await page.getByLabel(/^File/).setInputFiles(file);
}

/** The timeline of the import the page shows, once it has one; its job id. */
async function shownImport(page: Page): Promise<string> {
  const timeline = page.getByTestId("import-timeline");
  await expect(timeline).toBeVisible({ timeout: 30_000 });
  await expect(page).toHaveURL(/\/imports\?(.*&)?id=/);
  return (await timeline.getAttribute("data-job-id"))!;
}

test.use({ storageState: storageStateFor("ada@acme.test") });

test.describe("as ada (Acme member)", () => {
  test("uploads a CSV of events, follows its stages to the end, sees the bad rows and downloads the errors file", async ({
    page,
    context,
    playwright,
  }) => {
    await context.grantPermissions(["clipboard-read", "clipboard-write"], {
      origin: test.info().project.use.baseURL!,
    });
    const tag = `e2e-${randomUUID().slice(0, 8)}`;
    const bad = [10, 500, 2999];
    const file = await fileWith(`events-${tag}.csv`, eventsCsv(tag, 3000, bad));

    await page.goto("/imports");
    await expect(page.getByRole("heading", { name: "Imports", exact: true })).toBeVisible();
    await expect(page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Imports" })).toHaveAttribute(
      "aria-current",
      "page",
    );
    // The list comes first; "New import" opens the form, its heading focused.
    await expect(page.getByRole("form", { name: "Import a file" })).toHaveCount(0);
    await page.getByRole("link", { name: "New import" }).click();
    const form = page.getByRole("form", { name: "Import a file" });
    await expect(form.getByRole("heading", { name: "Import a file" })).toBeFocused();
    await pickFile(page, file);
    // The name says the format and the dataset, and the form lists the dataset's columns.
    await expect(form.getByLabel("Format")).toHaveValue("csv");
    await expect(form.getByLabel("Dataset")).toHaveValue("events");
    const columns = form.getByRole("region", { name: "Columns of events" }).getByTestId("dataset-column");
    await expect(columns.filter({ hasText: "occurred_at" })).toContainText("date and time");
    await expect(columns.filter({ hasText: "occurred_at" })).toContainText("optional");
    await expect(columns.filter({ hasText: "source" })).toContainText("required");
    await form.getByLabel("Allow up to N bad rows").fill("5");
    await form.getByRole("radio", { name: /^Insert/ }).check();
    await form.getByRole("button", { name: "Upload and import" }).click();

    // The upload bar fills; then the import's timeline takes over.
    const bar = page.getByRole("progressbar", { name: "Upload progress" });
    await expect(bar).toHaveAttribute("aria-valuenow", "100");
    await expect(page.getByTestId("upload-text")).toContainText("100%");
    const jobId = await shownImport(page);
    const timeline = page.getByTestId("import-timeline");
    await expect(page.getByRole("heading", { name: "Events · CSV · insert import" })).toBeFocused();
    await expect(timeline).toHaveAttribute("data-status", "succeeded", { timeout: 60_000 });
    await expect(page.getByTestId("import-stage")).toHaveText("All 5 stages done");
    const stages = timeline.getByTestId("import-stage-row");
    await expect(stages).toHaveCount(5);
    for (const name of ["scan", "parse", "chunk", "load", "commit"]) {
      const row = timeline.locator(`[data-testid="import-stage-row"][data-stage="${name}"]`);
      await expect(row.getByTestId("stage-status")).toHaveText("succeeded");
      await expect(row.getByRole("progressbar")).toHaveAttribute("aria-valuenow", "100");
    }
    await expect(timeline.locator('[data-stage="parse"]').getByTestId("stage-text")).toContainText("3,000 rows");

    // The counts, and what the database holds.
    const counts = timeline.getByTestId("import-counts");
    await expect(counts.getByTestId("count-rows-read")).toHaveText("3,000");
    await expect(counts.getByTestId("count-inserted")).toHaveText("2,997");
    await expect(counts.getByTestId("count-updated")).toHaveText("0");
    await expect(counts.getByTestId("count-rejected")).toHaveText("3");
    expect(
      await sqlCount(
        `SELECT count(*) AS n FROM events e JOIN tenants t ON t.id = e.tenant_id WHERE t.slug = 'acme' AND e.message LIKE $1`,
        [`${tag} row %`],
      ),
    ).toBe(2997);

    // The bad rows, inline: line numbers count the header as line 1.
    const badRows = page.getByRole("region", { name: "First bad rows" });
    await expect(badRows.getByTestId("bad-row")).toHaveCount(3);
    await expect(badRows.getByTestId("bad-row").first()).toContainText("11");
    await expect(badRows.getByTestId("bad-row").first()).toContainText("occurred_at");
    await expect(badRows.getByTestId("bad-row").last()).toContainText("3,000");

    // The errors file: downloaded from the page…
    const downloading = page.waitForEvent("download");
    await page.getByRole("link", { name: "Download the errors file" }).click();
    const download = await downloading;
    const text = await readFile((await download.path())!, "utf8");
    expect(text.split("\n")[0]).toBe("line,column,reason,value");
    expect(countCsvRecords(text) - 1).toBe(3);
    for (const line of [11, 501, 3000]) expect(text).toMatch(new RegExp(`^${line},occurred_at,`, "m"));
    expect(text).toContain("not-a-time");

    // …and by a link copied to the clipboard, which opens without signing in.
    await page.getByRole("button", { name: "Copy link" }).click();
    await expect(page.getByTestId("errors-link")).toContainText("Link copied");
    await expect(page.getByTestId("errors-link")).toContainText("until");
    const url = await page.evaluate(() => navigator.clipboard.readText());
    expect(url).toMatch(/\/d\/[^/]+$/);
    const anon = await playwright.request.newContext();
    const viaLink = await anon.get(url);
    expect(viaLink.status()).toBe(200);
    expect(await viaLink.text()).toBe(text);
    await anon.dispose();

    // The list has it, and opens its timeline.
    const row = page.locator(`[data-testid="import-row"][data-job-id="${jobId}"]`);
    await expect(row).toContainText("Events · CSV · insert");
    await expect(row).toContainText("2,997 inserted");
    await expect(row).toContainText("3 rejected");
    await expect(row.getByTestId("job-status")).toHaveText("succeeded");

    // Nothing grave for axe, with the stages, the counts and the bad rows on the page.
    await expectAccessible(page, "/imports with a finished import");

    // The job page leads with the result, shows the import's children as its 5 stages, and its
    // one attempt (which waited for each stage in turn) as one attempt, not as retries.
    await page.goto(`/jobs/${jobId}`);
    const result = page.getByTestId("import-result");
    await expect(result.getByTestId("count-rejected")).toHaveText("3");
    await expect(result.getByTestId("count-inserted")).toHaveText("2,997");
    await expect(result.getByRole("link", { name: "Download the errors file" })).toBeVisible();
    const stageTiles = page.getByRole("region", { name: "Stages" }).getByTestId("job-part");
    await expect(stageTiles).toHaveCount(5);
    await expect(page.getByRole("region", { name: "Stages" })).toContainText("5 of 5 done");
    await expect(page.getByTestId("attempt-row")).toHaveCount(1);
    await expect(page.getByTestId("attempt-outcome")).toHaveText(/^succeeded, after waiting for its stages \d+ times$/);
    await expect(page.getByTestId("attempts-timeline")).not.toContainText("retrying");
    await expect(stageTiles.first()).toContainText("Scan");
    await expect(page.getByRole("link", { name: "Stages and bad rows" })).toHaveAttribute(
      "href",
      `/imports?id=${jobId}`,
    );
  });

  test("a connection that drops during the upload is retried from the server's offset, and the import succeeds", async ({
    page,
  }) => {
    const tag = `e2e-${randomUUID().slice(0, 8)}`;
    const file = await fileWith(`events-${tag}.csv`, eventsCsv(tag, 2000));
    const seen: string[] = [];
    let dropped = false;
    // The first PATCH reaches the server, but its answer never reaches the page: the connection resets.
    await page.route("**/api/v1/uploads/*", async (route) => {
      const method = route.request().method();
      seen.push(method);
      if (method === "PATCH" && !dropped) {
        dropped = true;
        await route.fetch();
        await route.abort("connectionreset");
        return;
      }
      await route.continue();
    });

    await page.goto("/imports?new=1");
    await pickFile(page, file);
    await page.getByRole("button", { name: "Upload and import" }).click();
    const jobId = await shownImport(page);
    // The page asked the server how far it got (HEAD) and went on from there: the bytes were not sent again.
    expect(dropped).toBe(true);
    expect(seen[0]).toBe("PATCH");
    expect(seen).toContain("HEAD");
    expect(seen.filter((m) => m === "PATCH")).toHaveLength(1);
    await expect(page.getByRole("progressbar", { name: "Upload progress" })).toHaveAttribute("aria-valuenow", "100");
    await expect(page.getByTestId("import-timeline")).toHaveAttribute("data-status", "succeeded", { timeout: 60_000 });
    await expect(page.getByTestId("count-inserted")).toHaveText("2,000");
    const [upload] = await sql<{ size: string; received: string }>(
      "SELECT size::text, received::text FROM uploads WHERE import_job_id = $1",
      [jobId],
    );
    // Claimed by the import, whole (the cleanup may have removed it already once the import succeeded).
    if (upload) expect(upload.received).toBe(upload.size);
  });

  test("after a reload, picking the same file again resumes its upload instead of starting over", async ({ page }) => {
    const tag = `e2e-${randomUUID().slice(0, 8)}`;
    const file = await fileWith(`events-${tag}.csv`, eventsCsv(tag, 1500));
    // Every PATCH fails: the upload exists on the server, with none of its bytes.
    let failedPatches = 0;
    let down = true;
    await page.route("**/api/v1/uploads/*", async (route) => {
      if (!down || route.request().method() !== "PATCH") return route.continue();
      failedPatches++;
      await route.abort("connectionreset");
    });
    await page.goto("/imports?new=1");
    await pickFile(page, file);
    await page.getByRole("button", { name: "Upload and import" }).click();
    await expect.poll(() => failedPatches).toBeGreaterThan(0);
    await expect(page.getByTestId("upload-panel")).toHaveAttribute("data-phase", "uploading");

    // The connection comes back only once the first page is gone: a retry of its own, let through
    // before the reload, would finish the upload there (and forget it, as a finished upload is).
    await page.reload();
    down = false;
    const requests: string[] = [];
    page.on("request", (r) => {
      if (r.url().includes("/api/v1/uploads")) requests.push(r.method());
    });
    await pickFile(page, file);
    await page.getByRole("button", { name: "Upload and import" }).click();
    await expect(page.getByTestId("upload-resumed")).toContainText(/Resum(ing|ed) the upload of this file/);
    // The offset it asked for (HEAD) before going on: none of the bytes had arrived.
    await expect(page.getByTestId("upload-resumed")).toContainText("the server had 0 B");
    await shownImport(page);
    // No new upload: the one the first page made, asked for its offset, then sent.
    expect(requests).not.toContain("POST");
    expect(requests.slice(0, 2)).toEqual(["HEAD", "PATCH"]);
    await expect(page.getByTestId("import-timeline")).toHaveAttribute("data-status", "succeeded", { timeout: 60_000 });
    await expect(page.getByTestId("count-inserted")).toHaveText("1,500");
  });

  test("a file whose header does not match the dataset fails in scan, and the page says why", async ({ page }) => {
    const file = await fileWith("events-wrong-header.csv", "kind,source,message\nsignup,web,hello\n");
    await page.goto("/imports?new=1");
    await pickFile(page, file);
    await page.getByRole("button", { name: "Upload and import" }).click();
    await shownImport(page);
    const timeline = page.getByTestId("import-timeline");
    await expect(timeline).toHaveAttribute("data-status", "failed", { timeout: 60_000 });
    await expect(page.getByTestId("import-stage")).toHaveText("Failed in stage 1 of 5 (scan)");
    const scan = timeline.locator('[data-testid="import-stage-row"][data-stage="scan"]');
    await expect(scan.getByTestId("stage-status")).toHaveText("failed");
    await expect(scan.getByTestId("stage-error")).toContainText('unknown column "kind" for events');
    for (const name of ["parse", "chunk", "load", "commit"]) {
      await expect(timeline.locator(`[data-stage="${name}"]`).getByTestId("stage-status")).toHaveText("pending");
    }
    await expect(page.getByTestId("import-outcome")).toContainText("Stage scan failed");
    await expect(timeline.getByTestId("import-counts")).toHaveCount(0);
    await expectAccessible(page, "/imports with a failed import");
  });

  test("the API's field errors show under their fields; the upload is kept and the import starts once they are fixed", async ({
    page,
  }) => {
    const tag = `e2e-${randomUUID().slice(0, 8)}`;
    const file = await fileWith(`${tag}.jsonl`, `{"type":"signup","source":"web","message":"${tag}"}\n`);
    await page.goto("/imports?new=1");
    const form = page.getByRole("form", { name: "Import a file" });
    // Checked before anything is sent: the extension.
    await pickFile(page, await fileWith("notes.txt", "hello\n"));
    await expect(page.getByTestId("file-error")).toContainText("is not a CSV (.csv) or JSON Lines");
    await expect(form.getByRole("button", { name: "Upload and import" })).toBeDisabled();

    await pickFile(page, file);
    await expect(page.getByTestId("file-error")).toHaveCount(0);
    await expect(form.getByLabel("Format")).toHaveValue("jsonl");
    await form.getByLabel("Dataset").selectOption("events");
    const maxBadRows = form.getByLabel("Allow up to N bad rows");
    await maxBadRows.fill("-1");
    const uploads: string[] = [];
    page.on("request", (r) => {
      if (r.url().includes("/api/v1/uploads")) uploads.push(r.method());
    });
    await form.getByRole("button", { name: "Upload and import" }).click();
    await expect(form.getByText("must be at least 0")).toBeVisible();
    await expect(maxBadRows).toHaveAttribute("aria-invalid", "true");
    await expect(maxBadRows).toBeFocused();

    await maxBadRows.fill("0");
    await form.getByRole("button", { name: "Start import" }).click();
    await shownImport(page);
    expect(uploads.filter((m) => m === "POST")).toHaveLength(1);
    await expect(page.getByTestId("import-timeline")).toHaveAttribute("data-status", "succeeded", { timeout: 60_000 });
    await expect(page.getByRole("heading", { name: "Events · JSON Lines · insert import" })).toBeVisible();
  });

  test("an import is cancelled from its timeline, after a confirmation", async ({ page, playwright }) => {
    // An operator of Acme pauses the scan stage's type for the tenant: the import stays open, waiting for it.
    const oscar = await playwright.request.newContext({
      baseURL: test.info().project.use.baseURL,
      storageState: storageStateFor("oscar@acme.test"),
    });
    const paused = await oscar.post("/api/v1/ops/pauses", {
      data: { type: "import_scan", reason: "e2e imports cancel" },
    });
    expect(paused.status()).toBe(201);
    const pauseId = ((await paused.json()) as { id: string }).id;
    try {
      const file = await fileWith("events-cancel.csv", eventsCsv("cancel", 10));
      await page.goto("/imports?new=1");
      await pickFile(page, file);
      await page.getByRole("button", { name: "Upload and import" }).click();
      const jobId = await shownImport(page);
      // Held by the pause, and the page says so: who paused it, why, since when (finding 1 of issue 38).
      await expect(page.getByTestId("import-stage")).toContainText("Held by a pause at stage 1 of 5 (scan)");
      const notice = page.getByTestId("import-timeline").getByTestId("pause-notice");
      await expect(notice).toContainText(/paused by oscar@acme.test/i);
      await expect(notice).toContainText("e2e imports cancel");
      await expect(notice).toContainText("since");
      const row = page.locator(`[data-testid="import-row"][data-job-id="${jobId}"]`);
      await expect(row.getByTestId("import-held")).toContainText("e2e imports cancel");
      await expect(row.getByTestId("import-held")).not.toContainText("parts");
      await page.getByRole("button", { name: "Cancel import" }).click();
      await confirmDialog(page, "Cancel import", { reason: "wrong file" });
      await expect(page.getByTestId("import-timeline")).toHaveAttribute("data-status", "cancelled", {
        timeout: 30_000,
      });
      await expect(page.getByTestId("import-outcome")).toContainText("wrong file");
      await expect(page.getByTestId("import-outcome")).toContainText("Cancelled by ada@acme.test");
      await expect(page.getByRole("button", { name: "Cancel import" })).toHaveCount(0);
      const [job] = await sql<{ status: string }>("SELECT status::text FROM jobs WHERE id = $1", [jobId]);
      expect(job!.status).toBe("cancelled");
    } finally {
      expect((await oscar.delete(`/api/v1/ops/pauses/${pauseId}`)).status()).toBe(200);
      await oscar.dispose();
    }
  });
});
