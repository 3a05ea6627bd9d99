import { expect, test } from "./fixtures";
import { cliToken, sql, storageStateFor } from "./helpers";

/** A dead Acme or Globex probe job, as a worker leaves it. */
async function deadJob(tenant: string, message: string): Promise<string> {
  const [row] = await sql<{ id: string }>(
    `INSERT INTO jobs (id, tenant_id, type, queue, status, input, input_hash, attempts, max_attempts,
                       error_class, error_message, finished_at, updated_at)
     SELECT gen_random_uuid(), id, 'probe', 'bulk', 'failed', '{"sleepMs": 0}', 'e2e', 3, 3, 'retryable', $2, now(), now()
     FROM tenants WHERE slug = $1 RETURNING id`,
    [tenant, message],
  );
  return row!.id;
}

test.describe("as oscar (Acme operator)", () => {
  test.use({ storageState: storageStateFor("oscar@acme.test") });

  test("a dead Acme job is replayed from its page, the replay succeeds, and the action is on record", async ({
    page,
  }) => {
    const message = `dead-e2e-${Date.now()}: upstream answered 502`;
    const id = await deadJob("acme", message);
    await page.goto(`/jobs/${id}`);
    await expect(page.getByTestId("job-status")).toHaveText("failed");
    await expect(page.getByText(message).first()).toBeVisible();
    await page.getByRole("button", { name: "Replay job" }).click();
    await expect(page).not.toHaveURL(new RegExp(id));
    await expect(page.getByTestId("job-status")).toHaveText("succeeded", { timeout: 30_000 });

    await page.goto(`/jobs/${id}`);
    await expect(page.getByTestId("job-audit-entry")).toContainText(["replay by oscar@acme.test"]);
  });

  test("the overview counts his tenant's finished work and charts the last hour and day", async ({ page }) => {
    const dead = await deadJob("acme", `overview-e2e-${Date.now()}`);
    const res = await page.request.post("/api/v1/exports", { data: { dataset: "customers", format: "csv" } });
    const { id } = (await res.json()) as { id: string };
    await expect
      .poll(async () => (await sql<{ status: string }>("SELECT status FROM jobs WHERE id = $1", [id]))[0]?.status, {
        timeout: 30_000,
      })
      .toBe("succeeded");
    await page.goto("/ops/overview");
    await expect(page.getByTestId("overview-as-of")).toContainText("Counts as of", { timeout: 20_000 });
    // The export finished within the last 5 minutes: the interactive export row has throughput.
    const exports = page.getByTestId("overview-row").filter({ hasText: "interactive · export" });
    await expect(exports).toBeVisible({ timeout: 20_000 });
    await expect(exports.locator("td").nth(7)).not.toHaveText("0 · 0", { timeout: 30_000 });
    // The dead job inserted above is counted once the rollup (every 2 s here) and the page (every 10 s) refresh.
    await expect(
      page.getByTestId("overview-row").filter({ hasText: "bulk · probe" }).locator("td").nth(5),
    ).not.toHaveText("0", { timeout: 30_000 });
    // A bar for the minutes with finished attempts.
    await expect(page.getByTestId("chart-throughput").locator(".recharts-bar-rectangle path").first()).toBeVisible();
    await expect(page.getByTestId("chart-runtime").getByText("p99", { exact: true })).toBeVisible();
    await page.getByRole("button", { name: "Last day" }).click();
    await expect(page.getByRole("button", { name: "Last day" })).toHaveAttribute("aria-pressed", "true");
    await expect(page.getByTestId("chart-throughput")).toContainText("per 15 minutes");
    await sql("UPDATE jobs SET discarded_at = now() WHERE id = $1", [dead]);
  });
});

test.describe("as gina (Globex operator)", () => {
  test.use({ storageState: storageStateFor("gina@globex.test") });

  test("no Acme job appears in any console list, and Acme's job URLs answer 404", async ({ page, playwright }) => {
    const marker = `acme-only-e2e-${Date.now()}`;
    const acmeJob = await deadJob("acme", `${marker}: boom`);

    await page.goto("/ops/jobs");
    await page.getByLabel("Search input and errors").fill(marker);
    await page.getByRole("button", { name: "Apply filter" }).click();
    await expect(page.getByText("No jobs match.")).toBeVisible();
    for (const path of ["/ops/dead-letters", "/ops/stuck", "/ops/audit", "/ops/overview"]) {
      await page.goto(path);
      await expect(page.locator("main")).not.toContainText(marker);
      await expect(page.locator("main")).not.toContainText("acme.test");
    }
    expect((await page.goto(`/jobs/${acmeJob}`))?.status()).toBe(404);

    const api = await playwright.request.newContext({
      baseURL: test.info().project.use.baseURL,
      extraHTTPHeaders: { Authorization: `Bearer ${cliToken("gina@globex.test")}` },
    });
    try {
      const list = (await (await api.get(`/api/v1/ops/jobs?q=${marker}`)).json()) as { jobs: unknown[] };
      expect(list.jobs).toEqual([]);
      for (const path of [
        `/api/v1/ops/jobs/${acmeJob}`,
        `/api/v1/jobs/${acmeJob}`,
        `/api/v1/jobs/${acmeJob}/events`,
        `/api/v1/ops/overview?tenant=acme`,
        `/api/v1/ops/health?tenant=acme`,
      ]) {
        expect((await api.get(path)).status(), path).toBe(404);
      }
      // Health: her tenant's rows only, and no fleet-wide rows (they would tell of other tenants' work).
      const health = (await (await api.get("/api/v1/ops/health")).json()) as {
        queues: unknown[];
        tenants: { tenant: { slug: string } }[];
      };
      expect(health.queues).toEqual([]);
      expect(health.tenants.length).toBeGreaterThan(0);
      expect(health.tenants.map((r) => r.tenant.slug).filter((s) => s !== "globex")).toEqual([]);
      const action = await api.post("/api/v1/ops/jobs/actions", { data: { action: "replay", ids: [acmeJob] } });
      expect(await action.json()).toEqual({ action: "replay", matched: 0, affected: 0 });
      expect((await api.post(`/api/v1/jobs/${acmeJob}/replay`)).status()).toBe(404);
    } finally {
      await api.dispose();
    }
    const [untouched] = await sql<{ n: string }>("SELECT count(*) AS n FROM jobs WHERE replay_of_id = $1", [acmeJob]);
    expect(untouched!.n).toBe("0");
    await sql("UPDATE jobs SET discarded_at = now() WHERE id = $1", [acmeJob]);
  });
});

test.describe("as root (platform admin)", () => {
  test.use({ storageState: storageStateFor("root@conveyor.test") });

  test("the Health panel shows a queue falling behind, fleet-wide and for the tenant whose job waits", async ({
    page,
  }) => {
    // A tenant of its own whose interactive cap is 0: its job is ready (due five minutes ago, not
    // paused) but never admitted, so it waits without taking a slot from the other tests.
    const slug = `health-e2e-${Date.now()}`;
    const [tenant] = await sql<{ id: string }>(
      "INSERT INTO tenants (id, slug, name) VALUES (gen_random_uuid(), $1, 'Health e2e') RETURNING id",
      [slug],
    );
    try {
      await sql("INSERT INTO tenant_queue_limits (tenant_id, queue, max_running) VALUES ($1, 'interactive', 0)", [
        tenant!.id,
      ]);
      await sql(
        `INSERT INTO jobs (id, tenant_id, type, queue, status, input, input_hash, run_at, updated_at)
         VALUES (gen_random_uuid(), $1, 'probe', 'interactive', 'queued', '{}', 'e2e', now() - interval '5 minutes', now())`,
        [tenant!.id],
      );
      await page.goto("/ops/overview");
      const panel = page.getByRole("region", { name: "Health" });
      await expect(panel.getByRole("heading", { name: "Health" })).toBeVisible();
      const fleet = panel.locator('[data-testid="health-row"][data-queue="interactive"][data-tenant=""]');
      await expect(fleet).toHaveAttribute("data-state", "behind");
      await expect(fleet.getByTestId("health-state")).toHaveText("falling behind");
      await expect(fleet.getByTestId("health-oldestReadyAge")).toHaveAttribute("data-state", "behind");
      await expect(fleet.getByTestId("health-oldestReadyAge")).toContainText(/^5m/);
      // The fleet serves interactive: slots are counted.
      await expect(fleet.getByTestId("health-utilisation")).toContainText("slots");
      const mine = panel.locator(`[data-testid="health-row"][data-queue="interactive"][data-tenant="${slug}"]`);
      await expect(mine).toHaveAttribute("data-state", "behind");
      await expect(mine.getByTestId("health-utilisation")).toContainText("of its cap 0");
      await expect(panel.getByTestId("health-overall")).toHaveText("falling behind");
      // The same signal, as Prometheus reads it.
      const metrics = await (await page.request.get("/api/metrics")).text();
      expect(metrics).toMatch(
        new RegExp(`conveyor_tenant_oldest_ready_age_seconds\\{queue="interactive",tenant="${slug}"\\} 3\\d\\d`),
      );
    } finally {
      await sql("DELETE FROM tenants WHERE id = $1", [tenant!.id]);
    }
  });

  test("the explorer shows both tenants' jobs, and filters to one", async ({ page }) => {
    const marker = `both-e2e-${Date.now()}`;
    const ids = [await deadJob("acme", `${marker}: a`), await deadJob("globex", `${marker}: g`)];
    await page.goto("/ops/jobs");
    await page.getByLabel("Search input and errors").fill(marker);
    await page.getByRole("button", { name: "Apply filter" }).click();
    await expect(page.getByTestId("ops-job-tenant")).toHaveText(["globex", "acme"]);
    await page.getByLabel("Tenant", { exact: true }).fill("globex");
    await page.getByRole("button", { name: "Apply filter" }).click();
    await expect(page.getByTestId("ops-job-tenant")).toHaveText(["globex"]);

    await page.goto("/ops/overview");
    await expect(page.getByLabel("Tenant", { exact: true })).toBeVisible();
    await expect(page.getByTestId("overview-row").first()).toBeVisible({ timeout: 20_000 });
    await sql("UPDATE jobs SET discarded_at = now() WHERE id = ANY($1::uuid[])", [ids]);
  });
});
