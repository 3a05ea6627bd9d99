import { randomUUID } from "node:crypto";
import { expect, test } from "./fixtures";
import { confirmDialog, expectAccessible, sql, storageStateFor } from "./helpers";

/** Dead Acme probe jobs, as a worker leaves them, whose messages differ only in numbers: one group. */
async function deadJobs(marker: string, n: number): Promise<string[]> {
  const rows = await sql<{ id: string }>(
    `INSERT INTO jobs (id, tenant_id, type, queue, status, input, input_hash, attempts, max_attempts,
                       error_class, error_message, finished_at, updated_at)
     SELECT gen_random_uuid(), t.id, 'probe', 'bulk', 'failed', '{"sleepMs": 0}', 'e2e', 3, 3, 'retryable',
            $1 || ' <img src=x onerror="document.title=''pwned''"> after ' || (1000 + i) || ' ms', now(), now()
     FROM tenants t, generate_series(1, $2::int) i WHERE t.slug = 'acme'
     RETURNING id`,
    [marker, n],
  );
  return rows.map((r) => r.id);
}

test.describe("as oscar (operator)", () => {
  test.use({ storageState: storageStateFor("oscar@acme.test") });

  test("a group of dead jobs is shown once, as text, and replayed after confirming its count", async ({ page }) => {
    const marker = `upstream-e2e-${Date.now()}`;
    const ids = await deadJobs(marker, 3);
    await page.goto("/ops/dead-letters");
    const group = page.getByTestId("dead-letter-group").filter({ hasText: marker });
    await expect(group).toHaveCount(1);
    await expect(group.getByTestId("group-count")).toHaveText("3");
    await expect(group.locator("pre")).toContainText(`<img src=x onerror=`);
    expect(await page.title()).not.toBe("pwned");

    await group.getByRole("button", { name: "Replay 3" }).click();
    await confirmDialog(page, "Replay 3", { message: "Replay 3 probe jobs as new jobs?" });
    await expect(page.getByRole("status")).toHaveText("Replayed 3 of 3 jobs as new jobs.");
    await expect(page.getByTestId("dead-letter-group").filter({ hasText: marker })).toHaveCount(0);
    const replays = await sql<{ replay_of_id: string }>(
      "SELECT replay_of_id FROM jobs WHERE replay_of_id = ANY($1::uuid[])",
      [ids],
    );
    expect(replays.map((r) => r.replay_of_id).sort()).toEqual([...ids].sort());
    await expect
      .poll(
        async () =>
          (await sql("SELECT 1 FROM jobs WHERE replay_of_id = ANY($1::uuid[]) AND status = 'succeeded'", [ids])).length,
        {
          timeout: 30_000,
        },
      )
      .toBe(3);
    const audit = await sql<{ action: string }>(
      "SELECT action FROM audit_logs WHERE action = 'dead_letters.replay' AND target_ids && $1::text[]",
      [ids],
    );
    expect(audit).toHaveLength(1);
  });

  test("a group whose jobs crashed their worker opens on its jobs, and replaying it asks first and says why", async ({
    page,
  }) => {
    const marker = `worker-killer-e2e-${Date.now()}`;
    const ids = (
      await sql<{ id: string }>(
        `INSERT INTO jobs (id, tenant_id, type, queue, status, input, input_hash, attempts, max_attempts,
                           error_class, error_message, finished_at, updated_at)
         SELECT gen_random_uuid(), t.id, 'probe', 'bulk', 'failed', '{"crashWorker": true}', 'e2e', 10, 10, 'crashed',
                'the worker running it died: ' || $1, now(), now()
         FROM tenants t, generate_series(1, 2) WHERE t.slug = 'acme' RETURNING id`,
        [marker],
      )
    ).map((r) => r.id);
    await page.goto("/ops/dead-letters");
    const group = page.getByTestId("dead-letter-group").filter({ hasText: marker });
    await expect(group.getByTestId("group-count")).toHaveText("2");
    await expect(group.getByTestId("replay-warning")).toContainText("ended in their worker's death");

    // Replay is not the obvious button here; it asks, and says why.
    await group.getByRole("button", { name: "Replay 2" }).click();
    const dialog = page.getByRole("dialog");
    await expect(dialog).toContainText("Replay jobs that will likely fail again?");
    await expect(dialog).toContainText("will likely crash workers again");
    await dialog.getByRole("button", { name: "Go back" }).click();
    expect(await sql("SELECT 1 FROM jobs WHERE replay_of_id = ANY($1::uuid[])", [ids])).toHaveLength(0);

    // The group opens on exactly its jobs in the explorer.
    await group.getByTestId("group-jobs").click();
    await expect(page).toHaveURL(/\/ops\/jobs\?.*errorClass=crashed.*fingerprint=/);
    await expect(page.getByTestId("ops-job")).toHaveCount(2);
    for (const id of ids) await expect(page.locator(`[data-testid="ops-job-id"][title="${id}"]`)).toHaveCount(1);
  });
});

/** Dead Acme jobs of one type as a worker leaves them: `messages` one a job; returns their ids. */
async function deadOf(
  type: string,
  queue: string,
  errorClass: string,
  messages: string[],
  parentId: string | null = null,
  input: Record<string, unknown> = {},
): Promise<string[]> {
  const rows = await sql<{ id: string }>(
    `INSERT INTO jobs (id, tenant_id, type, queue, status, input, input_hash, attempts, max_attempts,
                       error_class, error_message, parent_id, finished_at, updated_at)
     SELECT gen_random_uuid(), t.id, $1, $2, 'failed', $6::jsonb, 'e2e', 3, 3, $3, m, $5::uuid, now(), now()
     FROM tenants t, unnest($4::text[]) m WHERE t.slug = 'acme'
     RETURNING id`,
    [type, queue, errorClass, messages, parentId, JSON.stringify(input)],
  );
  return rows.map((r) => r.id);
}

test.describe("as oscar (operator): groups by cause, labels by cause, filters", () => {
  test.use({ storageState: storageStateFor("oscar@acme.test") });

  test("one crash on three workers is one group; a bad CSV is one entry, the member's input; a webhook that gave up says so; filters stay in the URL", async ({
    page,
  }) => {
    const m = `dl-e2e-${Date.now()}`;
    // The same crash on three workers (their ids in the message differ).
    await deadOf("probe", "bulk", "crashed", [
      `${m} worker vm:31405:1fd691 stopped renewing its lease`,
      `${m} worker vm:2207:0c9e1a stopped renewing its lease`,
      `${m} worker web-2.internal:88:abc123 stopped renewing its lease`,
    ]);
    // A member's bad CSV: the import and its parse stage both failed; people see the import.
    // Its input as a real import's (ada's /imports lists it beside the others).
    const [csv] = await deadOf("import", "bulk", "permanent", [`${m} Stage parse failed: Line 2: bad date`], null, {
      uploadId: randomUUID(),
      dataset: "events",
      format: "csv",
      mode: "insert",
      maxBadRows: 0,
    });
    await deadOf("import_parse", "bulk", "permanent", [`${m} Line 2: bad date`], csv);
    // A webhook delivery that gave up after HTTP 500s.
    await deadOf("webhook_delivery", "webhooks", "exhausted", [`${m} HTTP 500; gave up after 8 requests`]);

    await page.goto("/ops/dead-letters");
    const ours = page.getByTestId("dead-letters-ours").getByTestId("dead-letter-group").filter({ hasText: m });
    await expect(ours).toHaveCount(1);
    await expect(ours.getByTestId("group-count")).toHaveText("3");
    await expect(ours.getByTestId("group-cause")).toContainText("stopped with the worker running them");

    const input = page.getByTestId("dead-letters-request").getByTestId("dead-letter-group").filter({ hasText: m });
    await expect(input).toHaveCount(1);
    await expect(input.getByTestId("group-count")).toHaveText("1");
    await expect(input.locator("pre")).toHaveText(`${m} Stage parse failed: Line 2: bad date`);
    await expect(page.getByTestId("dead-letters-request")).toContainText("Refused as asked (the member's input)");

    const webhook = page.getByTestId("dead-letters-downstream").getByTestId("dead-letter-group").filter({ hasText: m });
    await expect(webhook.getByTestId("group-cause")).toContainText("gave up after retrying on their own schedule");
    await expect(webhook.locator("pre")).toContainText("HTTP 500; gave up after 8 requests");
    await expect(webhook).not.toContainText("permanent");
    await expect(webhook.getByTestId("replay-warning")).toHaveCount(0);
    await expectAccessible(page, "the dead-letter page");

    // The CLI's filters, kept in the URL.
    const filters = page.getByRole("form", { name: "Filter dead letters" });
    await filters.getByLabel("Queue").selectOption("webhooks");
    await expect(page).toHaveURL(/queue=webhooks/);
    await expect(page.getByTestId("dead-letter-group").filter({ hasText: m })).toHaveCount(1);
    await filters.getByLabel("Error class").selectOption("crashed");
    await expect(page).toHaveURL(/errorClass=crashed/);
    await expect(page.getByTestId("dead-letter-group").filter({ hasText: m })).toHaveCount(0);
    await page.reload();
    await expect(filters.getByLabel("Error class")).toHaveValue("crashed");
    await filters.getByLabel("Queue").selectOption("");
    await expect(page.getByTestId("dead-letter-group").filter({ hasText: m })).toHaveCount(1);
    await filters.getByLabel("Type").fill("import");
    await filters.getByLabel("Type").press("Enter");
    await expect(page).toHaveURL(/type=import/);
    await expect(page.getByText("No dead letters match these filters.")).toBeVisible();
    await filters.getByLabel("Failed in").selectOption("1h");
    await expect(page).toHaveURL(/since=1h/);
    await filters.getByRole("button", { name: "Clear filters" }).click();
    await expect(page).toHaveURL(/\/ops\/dead-letters$/);
    await expect(page.getByTestId("dead-letter-group").filter({ hasText: m })).toHaveCount(3);
  });
});

test.describe("as gus (Globex member)", () => {
  test.use({ storageState: storageStateFor("gus@globex.test") });

  test("members have no dead-letter page, and the API refuses them", async ({ page }) => {
    await page.goto("/exports");
    await expect(page.getByRole("link", { name: "Dead letters" })).toHaveCount(0);
    expect((await page.goto("/ops/dead-letters"))?.status()).toBe(404);
    expect((await page.request.get("/api/v1/ops/dead-letters")).status()).toBe(403);
  });
});
