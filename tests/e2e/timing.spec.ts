import { expect, test } from "./fixtures";
import { confirmDialog, sql, storageStateFor } from "./helpers";

// Scenarios with a deadline, run by the `timing` project after every other e2e test
// (playwright.config.ts): on a 2-core machine, other tests' exports running alongside
// have held a one-second cancel to 1.2 s.

test.describe("as oscar (Acme operator)", () => {
  test.use({ storageState: storageStateFor("oscar@acme.test") });

  test("a running export is cancelled from its page and shows cancelled within a second", async ({ page }) => {
    // A gzip JSONL export of Acme's events in one part, twice the seeded million (this spec runs
    // last), runs for many seconds. (A split export's cancel is tested in
    // tests/integration/export-parts.test.ts.) It starts a few seconds from now, once its page is
    // open. On a busy 2-core machine, opening the page and clicking through the dialog while the
    // export takes the cores have taken most of the 8-10 s a million events now take.
    await sql(
      `INSERT INTO events (tenant_id, customer_id, type, source, payload, message, occurred_at)
       SELECT e.tenant_id, e.customer_id, e.type, e.source, e.payload, e.message, e.occurred_at
       FROM events e JOIN tenants t ON t.id = e.tenant_id WHERE t.slug = 'acme'`,
    );
    const res = await page.request.post("/api/v1/exports", {
      data: {
        dataset: "events",
        format: "jsonl",
        compression: "gzip",
        partRows: 100_000_000,
        runAt: new Date(Date.now() + 4_000).toISOString(),
      },
    });
    expect(res.status()).toBe(202);
    const { id } = (await res.json()) as { id: string };
    let historyFetches = 0;
    page.on("request", (r) => {
      if (new URL(r.url()).pathname === `/api/v1/jobs/${id}/history`) historyFetches++;
    });
    await page.goto(`/jobs/${id}`);
    await expect(page.getByRole("button", { name: "Cancel job" })).toBeEnabled();
    // Its page follows it live from scheduled to running, and its progress as it goes; the
    // attempts are fetched again when the job moves, not on every progress event.
    await expect(page.getByTestId("job-status")).toHaveText("running", { timeout: 30_000 });
    const progress = page.getByRole("region", { name: "Progress" }).getByTestId("progress-text");
    const rowsDone = async () =>
      Number((/([\d,]+) of [\d,]+ rows/.exec((await progress.textContent()) ?? "")?.[1] ?? "0").replaceAll(",", ""));
    await expect.poll(rowsDone).toBeGreaterThan(0);
    const fetchesWhileRunning = historyFetches;
    const first = await rowsDone();
    await expect.poll(rowsDone).toBeGreaterThan(first);
    expect(historyFetches - fetchesWhileRunning).toBeLessThanOrEqual(1);
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
