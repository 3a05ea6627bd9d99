import { expect, test } from "./fixtures";
import { confirmDialog, sql, storageStateFor } from "./helpers";

// Scenarios with a deadline, run by the `timing` project after every other e2e test
// (playwright.config.ts): on a 2-core machine, other tests' exports running alongside
// have held a one-second cancel to 1.2 s.

test.describe("as oscar (Acme operator)", () => {
  test.use({ storageState: storageStateFor("oscar@acme.test") });

  test("a running export is cancelled from its page and shows cancelled within a second", async ({ page }) => {
    // A gzip JSONL export of Acme's million events in one part runs for several seconds. (A split
    // export's cancel is tested in tests/integration/export-parts.test.ts.)
    const res = await page.request.post("/api/v1/exports", {
      data: { dataset: "events", format: "jsonl", compression: "gzip", partRows: 100_000_000 },
    });
    expect(res.status()).toBe(202);
    const { id } = (await res.json()) as { id: string };
    await page.goto(`/jobs/${id}`);
    await expect(page.getByTestId("job-status")).toHaveText("running", { timeout: 30_000 });
    await page.getByRole("button", { name: "Cancel job" }).click();
    await confirmDialog(page, "Cancel job");
    await expect(page.getByTestId("job-status")).toHaveText("cancelled", { timeout: 1_000 });
    const [row] = await sql<{ status: string; files: string }>(
      "SELECT status, (SELECT count(*) FROM export_files f WHERE f.job_id = j.id) AS files FROM jobs j WHERE id = $1",
      [id],
    );
    expect(row).toEqual({ status: "cancelled", files: "0" });
  });
});
