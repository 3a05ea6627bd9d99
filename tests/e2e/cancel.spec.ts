import { expect, test } from "./fixtures";
import { closeDb } from "@/lib/db";
import { enqueueJob } from "@/lib/jobs/enqueue";
import "@/lib/workloads";
import { confirmDialog, sql, storageStateFor } from "./helpers";

/** A job that runs for a minute unless stopped: the `probe` task, enqueued through lib like any job. */
async function enqueueLongJob(): Promise<string> {
  const [acme] = await sql<{ id: string }>("SELECT id FROM tenants WHERE slug = 'acme'");
  const { job } = await enqueueJob({ tenantId: acme!.id, type: "probe", input: { sleepMs: 60_000 } });
  return job.id;
}

test.afterAll(async () => closeDb());

test.describe("as ada (member)", () => {
  test.use({ storageState: storageStateFor("ada@acme.test") });

  test("a running job is cancelled from its page and shows cancelled within a second", async ({ page }) => {
    const id = await enqueueLongJob();
    await page.goto(`/jobs/${id}`);
    await expect(page.getByTestId("job-status")).toHaveText("running", { timeout: 15_000 });
    await expect(page.getByRole("button", { name: "Replay job" })).toHaveCount(0);
    await page.getByRole("button", { name: "Cancel job" }).click();
    await confirmDialog(page, "Cancel job");
    await expect(page.getByTestId("job-status")).toHaveText("cancelled", { timeout: 1_500 });
    await expect(page.getByTestId("attempt-row")).toContainText("cancelled");
    const [row] = await sql<{ status: string; error_class: string }>(
      "SELECT status, error_class FROM jobs WHERE id = $1",
      [id],
    );
    expect(row).toEqual({ status: "cancelled", error_class: "cancelled" });
  });
});

test.describe("as oscar (operator)", () => {
  test.use({ storageState: storageStateFor("oscar@acme.test") });

  test("a cancelled job is replayed from its page as a new, linked job", async ({ page }) => {
    const id = await enqueueLongJob();
    await page.goto(`/jobs/${id}`);
    await expect(page.getByTestId("job-status")).toHaveText("running", { timeout: 15_000 });
    await page.getByRole("button", { name: "Cancel job" }).click();
    await confirmDialog(page, "Cancel job");
    await expect(page.getByTestId("job-status")).toHaveText("cancelled", { timeout: 5_000 });
    await page.getByRole("button", { name: "Replay job" }).click();
    await expect(page).not.toHaveURL(new RegExp(id));
    const replayId = page.url().split("/").pop()!;
    await expect(page.getByTestId("job-status")).toHaveText(/queued|running/);
    const [replay] = await sql<{ replay_of_id: string }>("SELECT replay_of_id FROM jobs WHERE id = $1", [replayId]);
    expect(replay!.replay_of_id).toBe(id);
    await page.getByRole("button", { name: "Cancel job" }).click();
    await confirmDialog(page, "Cancel job");
    await expect(page.getByTestId("job-status")).toHaveText("cancelled", { timeout: 5_000 });
  });
});
