import { randomUUID } from "node:crypto";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Page } from "@playwright/test";
import { expect, test } from "./fixtures";
import { countCsvRecords, expectAccessible, sqlCount, storageStateFor } from "./helpers";
import { task, WIDTHS } from "./task";

/**
 * Issue 38's import tasks, walked as a member would at 1280 and 390 px: (a) how many rows did an
 * import reject, and get them as a file; (b) an import that failed for too many bad rows, imported
 * again from its page allowing them, without picking the file again.
 */

/** `rows` events, every message carrying `tag`; the rows in `bad` get a time that is none. */
function eventsCsv(tag: string, rows: number, bad: number[]): string {
  const lines = ["type,source,message,occurred_at"];
  for (let i = 1; i <= rows; i++) {
    lines.push(`signup,web,${tag} row ${i},${bad.includes(i) ? "not-a-time" : "2026-01-02T10:00:00Z"}`);
  }
  return `${lines.join("\n")}\n`;
}

async function fileWith(name: string, text: string): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), "conveyor-tasks-imports-"));
  const file = path.join(dir, name);
  await writeFile(file, text);
  return file;
}

/** Imports `file` through the form (set-up, not part of a task), allowing `allow` bad rows; its job id once it ended. */
async function importThroughForm(page: Page, file: string, allow: number, ends: "succeeded" | "failed") {
  await page.goto("/imports?new=1");
  const form = page.getByRole("form", { name: "Import a file" });
  await page.getByLabel(/^File/).setInputFiles(file);
  await form.getByLabel("Allow up to N bad rows").fill(String(allow));
  await form.getByRole("button", { name: "Upload and import" }).click();
  const timeline = page.getByTestId("import-timeline");
  await expect(timeline).toHaveAttribute("data-status", ends, { timeout: 60_000 });
  return (await timeline.getAttribute("data-job-id"))!;
}

/** The messages of the tenant's events carrying `tag`. */
const eventsTagged = (tag: string) =>
  sqlCount(
    `SELECT count(*) AS n FROM events e JOIN tenants t ON t.id = e.tenant_id WHERE t.slug = 'acme' AND e.message LIKE $1`,
    [`${tag} row %`],
  );

test.use({ storageState: storageStateFor("ada@acme.test") });

for (const width of WIDTHS) {
  test.describe(`at ${width.viewport.width} px`, () => {
    test.use({ viewport: width.viewport });

    test("how many rows did an import reject, and get the file", async ({ page }, info) => {
      const tag = `task-a-${width.name}-${randomUUID().slice(0, 8)}`;
      const jobId = await importThroughForm(
        page,
        await fileWith(`events-${tag}.csv`, eventsCsv(tag, 40, [7, 23])),
        5,
        "succeeded",
      );

      const t = task(page, info, "how many rows did an import reject");
      await page.goto("/imports");
      // The list says it on its row (a card on a phone): nothing cut off.
      const row = page.locator(`[data-testid="import-row"][data-job-id="${jobId}"]`);
      await expect(row.getByTestId("import-row-counts")).toContainText("40 read");
      await expect(row.getByTestId("import-row-counts")).toContainText("2 rejected");
      // Whole once scrolled to: not cut off on the right (the phone's cards) nor truncated.
      await row.getByTestId("import-row-counts").scrollIntoViewIfNeeded();
      await expect(row.getByTestId("import-row-counts")).toBeInViewport({ ratio: 1 });
      await t.shot("the list, the import's row saying 2 rejected");
      await expectAccessible(page, `/imports at ${width.viewport.width} px`);

      // Its page: the counts first, the bad rows, the errors file.
      await t.click(row.getByRole("link").first());
      const timeline = page.getByTestId("import-timeline");
      await expect(timeline.getByTestId("count-rejected")).toHaveText("2");
      await expect(timeline.getByTestId("bad-row")).toHaveCount(2);
      await t.shot("the import, its counts and bad rows");
      await expectAccessible(page, `an import's timeline at ${width.viewport.width} px`);
      const downloading = page.waitForEvent("download");
      await t.click(timeline.getByRole("link", { name: "Download the errors file" }));
      const text = await readFile((await (await downloading).path())!, "utf8");
      expect(text.split("\n")[0]).toBe("line,column,reason,value");
      expect(countCsvRecords(text) - 1).toBe(2);
      // Line numbers count the header as line 1.
      expect(text).toMatch(/^8,occurred_at,.*,not-a-time$/m);
      expect(text).toMatch(/^24,occurred_at,.*,not-a-time$/m);

      // The job page leads with the same result.
      await page.goto(`/jobs/${jobId}`);
      const result = page.getByTestId("import-result");
      await expect(result.getByTestId("count-rejected")).toHaveText("2");
      await expect(result.getByRole("link", { name: "Download the errors file" })).toBeVisible();
      await t.shot("the job page, its result first");
      await expectAccessible(page, `an import's job page at ${width.viewport.width} px`);
      expect(await t.done()).toBeLessThanOrEqual(2);
    });

    test("retry an import with the bad rows allowed", async ({ page }, info) => {
      const tag = `task-b-${width.name}-${randomUUID().slice(0, 8)}`;
      const failedId = await importThroughForm(
        page,
        await fileWith(`events-${tag}.csv`, eventsCsv(tag, 30, [3, 9, 27])),
        0,
        "failed",
      );

      const t = task(page, info, "retry an import with the bad rows allowed");
      await page.goto(`/jobs/${failedId}`);
      // The failure in the form's words, and the way on from it.
      const result = page.getByTestId("import-result");
      await expect(result.getByTestId("import-again-why")).toContainText(
        "More bad rows than allowed: 3 found, 0 allowed",
      );
      await expect(page.getByTestId("job-outcome")).toContainText("more bad rows than allowed: 3 found, 0 allowed");
      await expect(result.getByTestId("count-rejected")).toHaveText("3");
      await t.shot("the failed import's page");
      await expectAccessible(page, `a failed import's job page at ${width.viewport.width} px`);

      // Imported again from the same upload: nothing is sent but the request.
      const uploads: string[] = [];
      page.on("request", (r) => {
        if (r.url().includes("/api/v1/uploads")) uploads.push(r.method());
      });
      await t.click(result.getByRole("button", { name: "Import again allowing these 3 bad rows" }));
      await expect(page).not.toHaveURL(new RegExp(`/jobs/${failedId}$`));
      await expect(page.getByTestId("job-title")).toHaveText("Events · CSV import");
      const again = page.getByTestId("import-result");
      await expect(again.getByTestId("count-rejected")).toHaveText("3", { timeout: 60_000 });
      await expect(again.getByTestId("count-inserted")).toHaveText("27");
      await expect(page.getByTestId("import-again")).toHaveCount(0);
      await t.shot("the import again, succeeded with 3 rejected");
      await expectAccessible(page, `the imported-again job page at ${width.viewport.width} px`);
      expect(uploads).toEqual([]);
      expect(await eventsTagged(tag)).toBe(27);
      expect(await t.done()).toBe(1);
    });
  });
}
