import type { APIRequestContext, Browser, Page } from "@playwright/test";
import pg from "pg";
import { expect, test } from "./fixtures";
import { cliToken, confirmDialog, expectAccessible, sessionHeaders, sql, storageStateFor } from "./helpers";

// A member's dead ends, each walked in the browser: request an export again, see why one expired,
// page through every export, open a shared link that no longer works, copy a new token, and
// confirm before revoking or cancelling.

/** Polls the API until the export ends, and returns its status. */
async function finished(request: APIRequestContext, id: string): Promise<string> {
  let status = "";
  await expect
    .poll(
      async () => {
        status = ((await (await request.get(`/api/v1/jobs/${id}`)).json()) as { status: string }).status;
        return ["succeeded", "failed", "cancelled", "expired"].includes(status);
      },
      { timeout: 60_000 },
    )
    .toBe(true);
  return status;
}

async function requestExport(request: APIRequestContext, data: Record<string, unknown>): Promise<string> {
  const res = await request.post("/api/v1/exports", { data });
  expect(res.status()).toBe(202);
  return ((await res.json()) as { id: string }).id;
}

/** A member of a tenant of their own (no other test's exports in their list), signed in. */
async function ownTenantMember(
  browser: Browser,
): Promise<{ page: Page; tenantId: string; close: () => Promise<void> }> {
  const root = { Authorization: `Bearer ${cliToken("root@conveyor.test")}`, "content-type": "application/json" };
  const base = test.info().project.use.baseURL!;
  const slug = `member${Date.now()}`;
  const email = `m@${slug}.test`;
  const password = "a member's long password";
  const made = await fetch(`${base}/api/v1/ops/tenants`, {
    method: "POST",
    headers: root,
    body: JSON.stringify({ slug, name: "Member Co" }),
  });
  expect(made.status).toBe(201);
  const invite = (await (
    await fetch(`${base}/api/v1/invites`, {
      method: "POST",
      // Inviting needs a browser session: an API token may not mint accounts.
      headers: sessionHeaders("root@conveyor.test", base),
      body: JSON.stringify({ email, tenant: slug }),
    })
  ).json()) as { link: string };
  const accepted = await fetch(`${base}/api/v1/invites/accept`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ token: invite.link.split("/invite/")[1], name: "Mia", password }),
  });
  expect(accepted.status).toBe(200);
  const [tenant] = await sql<{ id: string }>("SELECT id FROM tenants WHERE slug = $1", [slug]);
  const context = await browser.newContext({ storageState: { cookies: [], origins: [] } });
  const page = await context.newPage();
  await page.goto("/login");
  await page.getByLabel("E-mail").fill(email);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByRole("heading", { name: "Exports", exact: true })).toBeVisible();
  return { page, tenantId: tenant!.id, close: () => context.close() };
}

/** True when the page is no wider than its window: nothing scrolls sideways. */
const noSidewaysScroll = (page: Page) =>
  page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth);

test.describe("as ada (member)", () => {
  test.use({ storageState: storageStateFor("ada@acme.test") });

  test("request again: the form opens filled in as the export was, focused, and makes a second export", async ({
    page,
  }) => {
    const input = {
      dataset: "customers",
      format: "jsonl",
      compression: "gzip",
      filter: { from: "2024-01-01", to: "2030-01-01" },
    };
    const first = await requestExport(page.request, input);
    await page.goto("/exports");
    const row = page.locator(`[data-job-id="${first}"]`);
    await expect(row).toContainText("customers · jsonl.gz");
    // The window in the browser's zone (the test browser's is UTC), the zone named once.
    await expect(row).toContainText("from 1 Jan 2024 until 1 Jan 2030 (UTC)");
    await row.getByRole("link", { name: "Request again" }).click();
    await expect(page).toHaveURL(new RegExp(`/exports\\?again=${first}$`));

    const form = page.getByRole("form", { name: "Request an export" });
    await expect(form.getByTestId("again-note")).toContainText("Filled in as the export of");
    await expect(form.getByLabel("Dataset")).toHaveValue("customers");
    await expect(form.getByLabel("Format")).toHaveValue("jsonl");
    await expect(form.getByLabel("Compression")).toHaveValue("gzip");
    await expect(form.getByLabel("From")).toHaveValue("2024-01-01");
    await expect(form.getByLabel("To (exclusive)")).toHaveValue("2030-01-01");
    // Spreadsheet safety is a CSV option: not offered for JSON Lines.
    await expect(form.getByLabel(/Spreadsheet-safe CSV/)).toHaveCount(0);
    await expect(form.getByLabel("Dataset")).toBeFocused();
    await expectAccessible(page, "/exports, filled in to request an export again");
    // Offered (unticked, as the export was) once CSV is picked; gone again with JSON Lines.
    await form.getByLabel("Format").selectOption("csv");
    await expect(form.getByLabel(/Spreadsheet-safe CSV/)).not.toBeChecked();
    await form.getByLabel("Format").selectOption("jsonl");
    await expect(form.getByLabel(/Spreadsheet-safe CSV/)).toHaveCount(0);

    await form.getByRole("button", { name: "Request export" }).click();
    await expect(form.getByRole("status").filter({ hasText: "Export queued" })).toBeVisible();
    const second = (await form.getByRole("link", { name: "Follow it" }).getAttribute("href"))!.split("/").pop()!;
    expect(second).not.toBe(first);
    await expect(page.locator(`[data-job-id="${second}"]`)).toBeVisible();
    const inputs = await sql<{ id: string; input: unknown }>("SELECT id, input FROM jobs WHERE id = ANY($1::uuid[])", [
      [first, second],
    ]);
    expect(inputs).toHaveLength(2);
    expect(inputs[0]!.input).toEqual(inputs[1]!.input);

    // The job page's link lands the same way (the URL is the contract: /exports?again=<jobId>).
    await page.goto(`/exports?again=${second}`);
    await expect(form.getByLabel("Dataset")).toHaveValue("customers");
    await expect(form.getByLabel("Dataset")).toBeFocused();
  });

  test("on a busy tenant, events for other jobs arriving faster than the list loads, a new export still appears in the list", async ({
    page,
  }) => {
    await page.goto("/exports");
    await expect(page.getByRole("list", { name: "Exports, newest first" })).toBeVisible();
    const [acme] = await sql<{ id: string }>("SELECT id FROM tenants WHERE slug = 'acme'");
    // Other members' and operators' jobs changing every few milliseconds: each event names a job
    // this list does not hold, so the page reloads its list. (Reloading by cancelling the load in
    // flight never let one finish; a busy tenant's export list then never showed a new export.)
    const notifier = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await notifier.connect();
    let flooding = true;
    const flood = (async () => {
      for (let seq = 1; flooding; seq++) {
        const jobId = `00000000-0000-7000-8000-${String(seq % 1000).padStart(12, "0")}`;
        await notifier.query("SELECT pg_notify('conveyor_job_events', $1)", [
          JSON.stringify({
            tenantId: acme!.id,
            jobId,
            seq,
            type: "probe",
            status: "running",
            attempts: 1,
            done: 0,
            total: null,
            unit: null,
            stage: null,
            message: null,
            at: new Date().toISOString(),
          }),
        ]);
        await new Promise((r) => setTimeout(r, 2));
      }
    })();
    try {
      await new Promise((r) => setTimeout(r, 1_000));
      const id = await requestExport(page.request, { dataset: "customers", format: "csv" });
      await expect(page.locator(`[data-job-id="${id}"]`)).toBeVisible({ timeout: 15_000 });
    } finally {
      flooding = false;
      await flood;
      await notifier.end();
    }
  });

  test("request again with another tenant's or an unknown export: a neutral 'not found' and an empty form", async ({
    page,
    playwright,
  }) => {
    const gus = await playwright.request.newContext({
      baseURL: test.info().project.use.baseURL,
      extraHTTPHeaders: { Authorization: `Bearer ${cliToken("gus@globex.test")}` },
    });
    const theirs = await requestExport(gus, { dataset: "events", format: "jsonl", compression: "gzip" });
    await gus.dispose();
    for (const id of [theirs, "00000000-0000-7000-8000-000000000000", "not-a-job"]) {
      await page.goto(`/exports?again=${id}`);
      const form = page.getByRole("form", { name: "Request an export" });
      const note = form.getByTestId("again-note");
      await expect(note).toHaveText("That export was not found. The form is empty.");
      await expect(note).toHaveAttribute("role", "status");
      await expect(note).toHaveClass(/bg-slate-50/);
      await expect(form.getByLabel("Dataset")).toHaveValue("orders");
      await expect(form.getByLabel("Format")).toHaveValue("csv");
      await expect(form.getByLabel("From")).toHaveValue("");
      await expect(form.getByLabel("Dataset")).toBeFocused();
    }
  });

  test("an export whose files expired says when, how long files are kept, and offers to request it again", async ({
    page,
  }) => {
    const id = await requestExport(page.request, { dataset: "customers", format: "csv" });
    expect(await finished(page.request, id)).toBe("succeeded");
    // As the cleanup leaves it, 8 days on: finished 8 days ago, kept 7, its file deleted a day ago.
    await sql("UPDATE jobs SET finished_at = now() - interval '8 days' WHERE id = $1", [id]);
    await sql(
      `UPDATE export_files f SET expires_at = j.finished_at + interval '7 days', deleted_at = now()
       FROM jobs j WHERE j.id = f.job_id AND j.id = $1`,
      [id],
    );
    await sql("UPDATE jobs SET status = 'expired' WHERE id = $1", [id]);
    const [file] = await sql<{ expires_at: Date }>("SELECT expires_at FROM export_files WHERE job_id = $1", [id]);
    await page.goto("/exports");
    const row = page.locator(`[data-job-id="${id}"]`);
    await expect(row.getByTestId("job-status")).toHaveText("expired");
    const note = row.getByTestId("expiry-note");
    await expect(note).toContainText(/^Its files expired on .+ \(files are kept 7 days\)\.$/);
    await expect(note.locator("time")).toHaveAttribute("datetime", file!.expires_at.toISOString());
    await expect(row.getByRole("link", { name: /Download/ })).toHaveCount(0);
    await row.getByRole("link", { name: "Request again" }).click();
    await expect(page.getByRole("form", { name: "Request an export" }).getByLabel("Dataset")).toHaveValue("customers");
  });

  test("a revoked, expired or unknown shared link opened in a browser shows a page saying so, with the API's status", async ({
    page,
    browser,
  }) => {
    const id = await requestExport(page.request, { dataset: "customers", format: "csv" });
    expect(await finished(page.request, id)).toBe("succeeded");
    const make = async () => {
      const res = await page.request.post(`/api/v1/exports/${id}/links`, { data: {} });
      expect(res.status()).toBe(201);
      return (await res.json()) as { id: string; url: string };
    };
    const revoked = await make();
    expect((await page.request.delete(`/api/v1/exports/${id}/links/${revoked.id}`)).status()).toBe(204);
    const expired = await make();
    await sql("UPDATE export_links SET expires_at = now() - interval '1 second' WHERE id = $1", [expired.id]);

    const stranger = await browser.newContext({ storageState: { cookies: [], origins: [] } });
    const visitor = await stranger.newPage();
    const cases = [
      { url: revoked.url, status: 410, heading: "This download link was revoked", todo: "ask them for a new link" },
      { url: expired.url, status: 410, heading: "This download link has expired", todo: "for a new link" },
      { url: "/d/dl_no-such-link", status: 404, heading: "This download link does not work", todo: "for a new link" },
    ];
    for (const c of cases) {
      const res = await visitor.goto(c.url);
      expect(res?.status(), c.url).toBe(c.status);
      await expect(visitor.getByRole("heading", { level: 1 })).toHaveText(c.heading);
      await expect(visitor.locator("main")).toContainText(c.todo);
      await expect(visitor.getByRole("link", { name: "Sign in" })).toHaveAttribute("href", "/login");
      // No raw JSON on the screen; scripts asking for JSON (or anything) still get it.
      await expect(visitor.locator("body")).not.toContainText('"error"');
      const api = await stranger.request.get(c.url);
      expect(api.status()).toBe(c.status);
      expect(((await api.json()) as { error: { code: string } }).error.code).toBe(
        c.status === 404 ? "not_found" : "gone",
      );
    }
    await visitor.goto(revoked.url);
    await expectAccessible(visitor, "the page of a revoked link");
    // At phone width the page fits.
    await visitor.setViewportSize({ width: 390, height: 800 });
    expect(await noSidewaysScroll(visitor)).toBe(true);
    await stranger.close();
  });

  test("a new token is copied with its Copy button; revoking asks first, naming the token; a second revoke changes nothing", async ({
    page,
    context,
  }) => {
    await context.grantPermissions(["clipboard-read", "clipboard-write"], {
      origin: test.info().project.use.baseURL!,
    });
    await page.goto("/settings");
    const name = `copy-${Date.now()}`;
    await page.getByLabel("Token name").fill(name);
    await page.getByRole("button", { name: "Create token" }).click();
    const token = (await page.getByTestId("new-token").textContent())!.trim();
    expect(token).toMatch(/^cvy_/);
    await page.getByRole("button", { name: "Copy token" }).click();
    await expect(page.getByRole("button", { name: "Copied" })).toBeVisible();
    // Said to screen readers too, in a live region of its own.
    await expect(page.getByText("Copied to the clipboard", { exact: true })).toHaveAttribute("role", "status");
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(token);

    // Backing out of the confirmation revokes nothing.
    await page.getByRole("button", { name: `Revoke token ${name}` }).click();
    const dialog = page.getByRole("dialog");
    await expect(dialog.getByRole("heading")).toHaveText(`Revoke token “${name}”?`);
    await expect(dialog).toContainText(`Every request with ${name}`);
    await dialog.getByRole("button", { name: "Go back" }).click();
    await expect(dialog).toHaveCount(0);
    const bearer = { Authorization: `Bearer ${token}` };
    expect((await page.request.get("/api/v1/jobs", { headers: bearer })).status()).toBe(200);

    // Revoked meanwhile (another tab): the revoke here changed nothing, and says so without green.
    const listed = (await (await page.request.get("/api/v1/tokens")).json()) as {
      tokens: { id: string; name: string }[];
    };
    const mine = listed.tokens.find((t) => t.name === name)!;
    expect((await page.request.delete(`/api/v1/tokens/${mine.id}`)).status()).toBe(204);
    await page.getByRole("button", { name: `Revoke token ${name}` }).click();
    await confirmDialog(page, "Revoke token");
    const result = page.getByTestId("revoke-result");
    await expect(result).toHaveText(`Nothing to revoke: token “${name}” was already revoked.`);
    await expect(result).not.toHaveClass(/emerald/);
    await expect(page.getByRole("button", { name: `Revoke token ${name}` })).toHaveCount(0);
    expect((await page.request.get("/api/v1/jobs", { headers: bearer })).status()).toBe(401);

    // A revoke that does revoke says so in green.
    const other = `other-${Date.now()}`;
    await page.getByLabel("Token name").fill(other);
    await page.getByRole("button", { name: "Create token" }).click();
    await page.getByRole("button", { name: `Revoke token ${other}` }).click();
    await confirmDialog(page, "Revoke token");
    await expect(result).toHaveText(`Token “${other}” revoked: requests with it are refused from now on.`);
    await expect(result).toHaveClass(/emerald/);
  });

  test("cancelling an export from the list asks first; going back keeps it", async ({ page }) => {
    const id = await requestExport(page.request, {
      dataset: "customers",
      runAt: new Date(Date.now() + 3_600_000).toISOString(),
    });
    await page.goto("/exports");
    const row = page.locator(`[data-job-id="${id}"]`);
    await expect(row.getByTestId("job-status")).toHaveText("scheduled");
    await row.getByRole("button", { name: "Cancel job" }).click();
    await expect(page.getByRole("dialog")).toContainText("Cancel this job?");
    await page.getByRole("dialog").getByRole("button", { name: "Go back" }).click();
    await expect(page.getByRole("dialog")).toHaveCount(0);
    await expect(row.getByTestId("job-status")).toHaveText("scheduled");
    expect((await sql<{ status: string }>("SELECT status FROM jobs WHERE id = $1", [id]))[0]!.status).toBe("scheduled");
    await row.getByRole("button", { name: "Cancel job" }).click();
    await confirmDialog(page, "Cancel job");
    await expect(row.getByTestId("job-status")).toHaveText("cancelled");
  });

  test("at phone width the Exports and Settings pages do not scroll sideways; Download is not cut off", async ({
    page,
  }) => {
    const id = await requestExport(page.request, { dataset: "orders", format: "csv" });
    expect(await finished(page.request, id)).toBe("succeeded");
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto("/exports");
    const row = page.locator(`[data-job-id="${id}"]`);
    const download = row.getByRole("link", { name: /Download/ });
    await expect(download).toBeVisible();
    expect(await noSidewaysScroll(page)).toBe(true);
    for (const control of [download, row.getByRole("link", { name: "Request again" })]) {
      const box = (await control.boundingBox())!;
      expect(box.x).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width).toBeLessThanOrEqual(390);
    }
    await page.goto("/settings");
    await page.getByLabel("Token name").fill(`phone-${Date.now()}-with-a-rather-long-name-that-must-wrap`);
    await page.getByRole("button", { name: "Create token" }).click();
    await expect(page.getByTestId("new-token")).toBeVisible();
    expect(await noSidewaysScroll(page)).toBe(true);
  });
});

test("a member pages through all 60 of their tenant's exports, 25 at a time", async ({ browser }) => {
  const { page, tenantId, close } = await ownTenantMember(browser);
  try {
    // 60 finished exports, some made in the same millisecond (the list breaks ties by id).
    await sql(
      `INSERT INTO jobs (id, tenant_id, type, queue, status, input, input_hash, created_at, finished_at, updated_at)
       SELECT gen_random_uuid(), $1, 'export', 'interactive', 'expired',
              jsonb_build_object('dataset', 'orders', 'format', 'csv', 'compression', 'none'), 'e2e-paging',
              now() - make_interval(mins => i / 3), now() - make_interval(mins => i / 3), now()
       FROM generate_series(1, 60) AS i`,
      [tenantId],
    );
    await page.reload();
    const rows = page.getByTestId("export-row");
    await expect(rows).toHaveCount(25);
    await expect(page.getByTestId("export-count")).toHaveText("The newest 25; older ones come with Load more.");
    await page.getByRole("button", { name: "Load more" }).click();
    await expect(rows).toHaveCount(50);
    await page.getByRole("button", { name: "Load more" }).click();
    await expect(rows).toHaveCount(60);
    await expect(page.getByTestId("export-count")).toHaveText("All 60 exports.");
    await expect(page.getByRole("button", { name: "Load more" })).toHaveCount(0);
    const ids = await rows.evaluateAll((els) => els.map((e) => e.getAttribute("data-job-id")));
    const expected = await sql<{ id: string }>(
      "SELECT id FROM jobs WHERE tenant_id = $1 AND type = 'export' ORDER BY created_at DESC, id DESC",
      [tenantId],
    );
    expect(ids).toEqual(expected.map((r) => r.id));
  } finally {
    await close();
  }
});
