import { expect, test } from "@playwright/test";
import { confirmDialog, sql, storageStateFor } from "./helpers";

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
});
