import type { APIRequest, Page, TestInfo } from "@playwright/test";
import { expect, test } from "./fixtures";
import { cliToken, expectAccessible, sidewaysOverflow, sql, sqlCount, storageStateFor, unzip } from "./helpers";

/**
 * Repairing one dead part (issue 35), as the people involved see it, at desktop and at phone
 * width: a member's split export fails with a partial zip because one part died; the operator's
 * Replay button says it repairs that one dead part; the repair runs only that part again; the
 * member's export then says it was repaired and its download gives the complete archive.
 * In the scenarios project (its file name): it briefly pauses Globex's export parts, so that a
 * part can be made to die before it runs, and runs after the specs that lift every pause.
 */

const WIDTHS = [
  { name: "desktop", viewport: { width: 1280, height: 900 } },
  { name: "phone", viewport: { width: 390, height: 844 } },
] as const;

// One at a time: both would pause the same scope.
test.describe.configure({ mode: "serial" });

/** A screenshot of the step for the report, the page fits its width, and axe finds nothing serious. */
async function step(page: Page, info: TestInfo, name: string): Promise<void> {
  await info.attach(`${info.project.name}-${name}`, {
    body: await page.screenshot({ fullPage: true }),
    contentType: "image/png",
  });
  const { over, culprits } = await sidewaysOverflow(page);
  expect(over, `${name}: the page scrolls sideways by ${over} px: ${culprits.join("; ")}`).toBeLessThanOrEqual(0);
  await expectAccessible(page, name);
}

const statusOf = async (id: string) =>
  (await sql<{ status: string }>("SELECT status::text AS status FROM jobs WHERE id = $1", [id]))[0]?.status;

/** A split export of Globex's events requested by gus, whose part 2 dies: returns its id once it failed. */
async function exportWithDeadPart(request: APIRequest): Promise<string> {
  const api = (who: string) =>
    request.newContext({
      baseURL: test.info().project.use.baseURL,
      extraHTTPHeaders: { Authorization: `Bearer ${cliToken(who)}` },
    });
  const gina = await api("gina@globex.test");
  const gus = await api("gus@globex.test");
  const reason = `export-repair e2e ${Date.now()}`;
  const paused = await gina.post("/api/v1/ops/pauses", { data: { queue: "bulk", type: "export_part", reason } });
  expect(paused.status()).toBe(201);
  const pauseId = ((await paused.json()) as { id: string }).id;
  let id: string;
  try {
    const rows = await sqlCount(
      "SELECT count(*) AS n FROM events e JOIN tenants t ON t.id = e.tenant_id WHERE t.slug = 'globex'",
    );
    const res = await gus.post("/api/v1/exports", {
      data: { dataset: "events", format: "csv", partRows: Math.max(1_000, Math.ceil(rows / 4)) },
    });
    expect(res.status()).toBe(202);
    id = ((await res.json()) as { id: string }).id;
    await expect.poll(() => sqlCount("SELECT count(*) AS n FROM jobs WHERE parent_id = $1", [id])).toBeGreaterThan(2);
    // Part 2 cannot run: its input names no dataset any more (a permanent failure).
    await sql(
      `UPDATE jobs SET input = jsonb_set(input, '{request,dataset}', '"gone"') WHERE parent_id = $1 AND (input->>'part')::int = 2`,
      [id],
    );
  } finally {
    expect((await gina.delete(`/api/v1/ops/pauses/${pauseId}`)).status()).toBe(200);
    await gina.dispose();
    await gus.dispose();
  }
  await expect.poll(() => statusOf(id), { timeout: 120_000 }).toBe("failed");
  return id;
}

for (const { name, viewport } of WIDTHS) {
  test(`a failed split export is repaired at ${name} width: one dead part runs again, the member gets the complete archive`, async ({
    browser,
    playwright,
  }, info) => {
    // Minutes on a loaded 2-core machine: two API tokens made by the CLI, four pages checked by axe.
    test.setTimeout(360_000);
    const id = await exportWithDeadPart(playwright.request);
    const parts = await sqlCount("SELECT count(*) AS n FROM jobs WHERE parent_id = $1", [id]);
    const ginaCtx = await browser.newContext({ storageState: storageStateFor("gina@globex.test"), viewport });
    const gusCtx = await browser.newContext({ storageState: storageStateFor("gus@globex.test"), viewport });
    const gina = await ginaCtx.newPage();
    const gus = await gusCtx.newPage();
    try {
      // The member: the export failed, and offers its finished parts.
      await gus.goto(`/jobs/${id}`);
      await expect(gus.getByTestId("job-status")).toHaveText("failed");
      await expect(gus.getByTestId("download")).toHaveText(`Download partial (${parts - 1} of ${parts} parts)`);
      await step(gus, info, "member-sees-partial");

      // The operator: Replay says what it does — repair the one dead part.
      await gina.goto(`/jobs/${id}`);
      const repair = gina.getByRole("button", { name: "Repair 1 dead part" });
      await expect(repair).toBeVisible();
      await step(gina, info, "operator-sees-repair");
      await repair.click();
      await expect(gina).not.toHaveURL(new RegExp(id));
      const repairId = gina.url().split("/").pop()!;
      await expect(gina.getByTestId("job-status")).toHaveText("succeeded", { timeout: 120_000 });
      await expect(gina.getByTestId("replay-of-link")).toHaveAttribute("href", `/jobs/${id}`);
      // Its one part is the dead one, named by its number in the export.
      await expect(gina.getByTestId("job-part")).toHaveCount(1);
      await expect(gina.getByTestId("job-part")).toContainText("Part 2");
      await step(gina, info, "repair-succeeded");
      // Only the dead part ran again.
      expect(await sqlCount("SELECT count(*) AS n FROM jobs WHERE parent_id = $1", [repairId])).toBe(1);

      // The member is told: the export says it was repaired, and its download is the complete archive.
      await gus.goto(`/jobs/${id}`);
      const told = gus.getByTestId("job-repaired");
      await expect(told).toContainText("Repaired");
      await expect(told.getByRole("link")).toHaveAttribute("href", `/jobs/${repairId}`);
      const download = gus.getByRole("link", { name: "Download the complete archive" });
      await expect(download).toBeVisible();
      await step(gus, info, "member-sees-repaired");
      const file = await gus.request.get((await download.getAttribute("href"))!);
      expect(file.status()).toBe(200);
      const manifest = JSON.parse((await unzip(await file.body())).get("manifest.json")!.toString()) as {
        partial: boolean;
        files: unknown[];
        repair: { of: string; rerun: number[] };
      };
      expect(manifest.partial).toBe(false);
      expect(manifest.files).toHaveLength(parts);
      expect(manifest.repair).toMatchObject({ of: id, rerun: [2] });

      // And in the exports list.
      await gus.goto("/exports");
      const row = gus.locator(`[data-testid="export-row"][data-job-id="${id}"]`);
      await expect(row.getByTestId("export-repaired")).toContainText("Repaired");
      await step(gus, info, "member-list-repaired");
      expect(
        await sqlCount(
          "SELECT count(*) AS n FROM audit_logs WHERE action = 'export.repaired' AND $1 = ANY(target_ids)",
          [id],
        ),
      ).toBe(1);
    } finally {
      await ginaCtx.close();
      await gusCtx.close();
    }
  });
}
