import { createHash } from "node:crypto";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { gunzipSync } from "node:zlib";
import { exportStorageDir } from "@/lib/env";
import { attemptFileKey } from "@/lib/exports/files";
import { partFileName } from "@/lib/exports/parts";
import type { ExportRequest } from "@/lib/exports/schema";
import { expect, test } from "./fixtures";
import {
  DEMO_PASSWORD,
  cliToken,
  confirmDialog,
  countCsvRecords,
  sql,
  sqlCount,
  storageStateFor,
  unzip,
} from "./helpers";

test.describe("as ada (Acme member)", () => {
  test.use({ storageState: storageStateFor("ada@acme.test") });

  test("requests an orders export, watches it finish live, and downloads every order", async ({ page }) => {
    await page.goto("/exports");
    // The list comes first; New export opens the form and puts the focus in it.
    const form = page.getByRole("form", { name: "Request an export" });
    await expect(form).toHaveCount(0);
    await page.getByRole("link", { name: "New export" }).click();
    await expect(form.getByLabel("Dataset")).toBeFocused();
    await form.getByLabel("Dataset").selectOption("orders");
    await form.getByLabel("Format").selectOption("csv");
    await form.getByLabel("Compression").selectOption("none");
    await form.getByRole("button", { name: "Request export" }).click();
    await expect(page.getByRole("status")).toContainText("Export queued");

    const jobId = (await page.getByRole("link", { name: "Follow it" }).getAttribute("href"))!.split("/").pop()!;
    const row = page.locator(`[data-job-id="${jobId}"]`);
    await expect(row).toBeVisible();
    // Live: the bar reaches 100% and the status flips without a reload.
    await expect(row.getByRole("progressbar")).toHaveAttribute("aria-valuenow", "100", { timeout: 60_000 });
    await expect(row.getByTestId("job-status")).toHaveText("succeeded");
    await expect(row.getByTestId("progress-text")).toContainText("100%");

    const downloadPromise = page.waitForEvent("download");
    await row.getByRole("link", { name: /Download/ }).click();
    const download = await downloadPromise;
    expect(download.suggestedFilename()).toMatch(/^orders-[0-9a-f]{8}\.csv$/);
    const text = await readFile((await download.path())!, "utf8");
    const n = await sqlCount(
      "SELECT count(*) AS n FROM orders o JOIN tenants t ON t.id = o.tenant_id WHERE t.slug = 'acme'",
    );
    expect(countCsvRecords(text) - 1).toBe(Number(n));
    const [file] = await sql<{ download_count: number }>("SELECT download_count FROM export_files WHERE job_id = $1", [
      jobId,
    ]);
    expect(file!.download_count).toBe(1);

    // The detail page shows the same job, its file and the finished bar.
    await page.goto(`/jobs/${jobId}`);
    await expect(page.getByTestId("job-status")).toHaveText("succeeded");
    await expect(page.getByRole("progressbar", { name: "Job progress" })).toHaveAttribute("aria-valuenow", "100");
    await expect(page.getByRole("region", { name: "Files" })).toContainText(
      `${Number(n).toLocaleString("en-US")} rows`,
    );
  });

  test("a million-event export runs as at least 4 parts, shown in a grid, and downloads as a zip whose manifest matches the database", async ({
    page,
  }) => {
    await page.goto("/exports?new=1");
    const form = page.getByRole("form", { name: "Request an export" });
    await form.getByLabel("Dataset").selectOption("events");
    await form.getByLabel("Format").selectOption("csv");
    await form.getByLabel("Compression").selectOption("gzip");
    await form.getByRole("button", { name: "Request export" }).click();
    const jobId = (await page.getByRole("link", { name: "Follow it" }).getAttribute("href"))!.split("/").pop()!;

    await page.goto(`/jobs/${jobId}`);
    const parts = page.getByTestId("job-part");
    await expect(parts.first()).toBeVisible({ timeout: 30_000 });
    const count = await parts.count();
    expect(count).toBeGreaterThanOrEqual(4);
    await expect(page.getByTestId("job-status")).toHaveText("succeeded", { timeout: 120_000 });
    await expect(page.locator('[data-testid="job-part"][data-status="succeeded"]')).toHaveCount(count);
    await expect(page.getByRole("progressbar", { name: "Job progress" })).toHaveAttribute("aria-valuenow", "100");

    const downloadPromise = page.waitForEvent("download");
    await page.getByRole("link", { name: "Download" }).click();
    const download = await downloadPromise;
    expect(download.suggestedFilename()).toMatch(/^events-[0-9a-f]{8}\.zip$/);
    const entries = await unzip(await readFile((await download.path())!));
    const manifest = JSON.parse(entries.get("manifest.json")!.toString()) as {
      rowCount: number;
      partial: boolean;
      snapshot: { lastId: string };
      files: { name: string; rows: number; sha256: string }[];
    };
    expect(manifest.partial).toBe(false);
    expect(manifest.files).toHaveLength(count);
    const n = await sqlCount(
      "SELECT count(*) AS n FROM events e JOIN tenants t ON t.id = e.tenant_id WHERE t.slug = 'acme' AND e.id <= $1",
      [manifest.snapshot.lastId],
    );
    expect(manifest.rowCount).toBe(n);
    let rows = 0;
    for (const f of manifest.files) {
      const bytes = entries.get(f.name)!;
      expect(createHash("sha256").update(bytes).digest("hex")).toBe(f.sha256);
      rows += countCsvRecords(gunzipSync(bytes).toString("utf8")) - 1;
    }
    expect(rows).toBe(n);
  });

  test("a split export's page counts its parts done and shows a part's retry where it is, its redone rows counted once", async ({
    page,
    playwright,
  }) => {
    test.setTimeout(180_000);
    const reason = `e2e: progress ${Date.now()}`;
    const oscar = await playwright.request.newContext({
      baseURL: test.info().project.use.baseURL,
      extraHTTPHeaders: { Authorization: `Bearer ${cliToken("oscar@acme.test")}` },
    });
    const pause = async () => {
      const res = await oscar.post("/api/v1/ops/pauses", { data: { queue: "bulk", type: "export_part", reason } });
      expect(res.status()).toBe(201);
      return ((await res.json()) as { id: string }).id;
    };
    const resume = async (id: string) => expect((await oscar.delete(`/api/v1/ops/pauses/${id}`)).status()).toBe(200);
    let blocked: string | null = null;
    try {
      // The parts wait while the test learns which job part 3 is.
      const first = await pause();
      const request = { dataset: "events", format: "csv", compression: "none", partRows: 150_000 } as const;
      const res = await page.request.post("/api/v1/exports", { data: request });
      expect(res.status()).toBe(202);
      const { id } = (await res.json()) as { id: string };
      type Part = { id: string; tenant_id: string; child_index: number };
      let parts: Part[] = [];
      await expect(async () => {
        parts = await sql<Part>(
          "SELECT id, tenant_id, child_index FROM jobs WHERE parent_id = $1 ORDER BY child_index",
          [id],
        );
        expect(parts.length).toBeGreaterThanOrEqual(4);
      }).toPass({ timeout: 60_000 });
      const n = parts.length;
      const third = parts[2]!;
      // Part 3's first attempt streams its rows, then cannot put its file in place (a directory
      // holds its name): it fails once. Its second attempt writes under another path.
      blocked = path.join(
        exportStorageDir(),
        attemptFileKey(
          {
            id: third.id,
            tenantId: third.tenant_id,
            type: "export_part",
            attempt: 1,
            resume: 0,
            maxAttempts: 3,
            createdById: null,
          },
          partFileName(request as ExportRequest, 3, n),
          id,
        ),
      );
      await mkdir(blocked, { recursive: true });
      await writeFile(path.join(blocked, "in-the-way"), "x");

      await page.goto(`/jobs/${id}`);
      const message = page.getByTestId("job-progress-message");
      await expect(message).toContainText(`0 of ${n} parts done`);

      // Part 3 starts; pause the parts again at once, so its retry waits where the page shows it.
      await resume(first);
      await expect(async () => {
        const [p] = await sql<{ status: string }>("SELECT status FROM jobs WHERE id = $1", [third.id]);
        expect(p!.status).not.toBe("queued");
      }).toPass({ timeout: 60_000, intervals: [20] });
      const second = await pause();
      await expect(async () => {
        const [p] = await sql<{ status: string }>("SELECT status FROM jobs WHERE id = $1", [third.id]);
        expect(p!.status).toBe("retrying");
      }).toPass({ timeout: 60_000 });
      // A backoff of 0–2 s is too short to read: make it 20 s, as a later attempt's would be.
      await sql("UPDATE jobs SET run_at = now() + interval '20 seconds' WHERE id = $1 AND status = 'retrying'", [
        third.id,
      ]);
      await resume(second);

      const retry = page.getByTestId("progress-retry");
      await expect(retry).toHaveText(new RegExp(`^part 3 of ${n} retrying, attempt 2 of 3, next in \\d+s$`));
      const [counts] = await sql<{ done: number }>(
        "SELECT count(*)::int AS done FROM jobs WHERE parent_id = $1 AND status = 'succeeded'",
        [id],
      );
      await expect(message).toContainText(new RegExp(`^\\d+ of ${n} parts done`));
      expect(counts!.done).toBeLessThan(n);
      // When it runs: no longer waiting, and then gone with the export's end.
      await expect(page.getByTestId("job-status")).toHaveText("succeeded", { timeout: 120_000 });
      await expect(retry).toHaveCount(0);
      await expect(page.getByRole("region", { name: "Parts" })).toContainText(`${n} of ${n} done`);
      const [row] = await sql<{ done: string; rows: string; attempts: number }>(
        `SELECT p.progress_done::text AS done, p.result->>'rows' AS rows, c.attempts
           FROM jobs p JOIN jobs c ON c.parent_id = p.id AND c.id = $2 WHERE p.id = $1`,
        [id, third.id],
      );
      expect(row!.attempts).toBe(2);
      expect(row!.done).toBe(row!.rows); // part 3's redone rows are counted once
    } finally {
      await sql("UPDATE queue_pauses SET resumed_at = now() WHERE reason = $1 AND resumed_at IS NULL", [reason]);
      if (blocked) await rm(blocked, { recursive: true, force: true });
      await oscar.dispose();
    }
  });

  test("a download link works without signing in until it is revoked; another tenant cannot make one", async ({
    page,
    browser,
    playwright,
  }) => {
    const res = await page.request.post("/api/v1/exports", { data: { dataset: "customers", format: "csv" } });
    const { id } = (await res.json()) as { id: string };
    await page.goto(`/jobs/${id}`);
    await expect(page.getByTestId("job-status")).toHaveText("succeeded", { timeout: 30_000 });
    await page.getByRole("button", { name: "Create a download link (15 minutes)" }).click();
    const url = (await page.getByTestId("new-link").getAttribute("href"))!;
    expect(url).toMatch(/\/d\/dl_/);

    // Somebody without an account opens it.
    const stranger = await browser.newContext({ storageState: { cookies: [], origins: [] } });
    const got = await stranger.request.get(url);
    expect(got.status()).toBe(200);
    expect(got.headers()["content-disposition"]).toMatch(/customers-[0-9a-f]{8}\.csv/);
    const n = await sqlCount(
      "SELECT count(*) AS n FROM customers c JOIN tenants t ON t.id = c.tenant_id WHERE t.slug = 'acme'",
    );
    expect(countCsvRecords(await got.text()) - 1).toBe(n);
    await page.reload();
    await expect(page.getByTestId("export-link").first()).toContainText("downloaded 1×");

    await page.getByRole("button", { name: "Revoke" }).click();
    await confirmDialog(page, "Revoke link");
    await expect(page.getByTestId("link-state").first()).toHaveText("revoked");
    expect((await stranger.request.get(url)).status()).toBe(410);
    await stranger.close();

    const gus = await playwright.request.newContext({
      baseURL: test.info().project.use.baseURL,
      extraHTTPHeaders: { Authorization: `Bearer ${cliToken("gus@globex.test")}` },
    });
    expect((await gus.post(`/api/v1/exports/${id}/links`, { data: {} })).status()).toBe(404);
    // The body is optional: a bare POST makes a 15-minute link.
    const bare = await page.request.post(`/api/v1/exports/${id}/links`);
    expect(bare.status()).toBe(201);
    expect(((await bare.json()) as { url: string }).url).toMatch(/^\/d\/dl_/);
    expect((await gus.delete(`/api/v1/exports/${id}`)).status()).toBe(404);
    await gus.dispose();
  });

  test("the detail page follows a running export live", async ({ page, request }) => {
    // A gzip JSONL export of Acme's events takes long enough to watch.
    const res = await request.post("/api/v1/exports", {
      data: { dataset: "events", format: "jsonl", compression: "gzip" },
    });
    expect(res.status()).toBe(202);
    const job = (await res.json()) as { id: string };
    await page.goto(`/jobs/${job.id}`);
    const bar = page.getByRole("progressbar", { name: "Job progress" });
    // Seen in progress (or already done on a fast machine), then done, without a reload.
    await expect(page.getByTestId("job-status")).toHaveText(/queued|running|succeeded/);
    await expect(page.getByTestId("job-status")).toHaveText("succeeded", { timeout: 80_000 });
    await expect(bar).toHaveAttribute("aria-valuenow", "100");
    await expect(page.getByRole("link", { name: "Download" })).toBeVisible();
  });

  test("bad input shows the API's message next to the form", async ({ page }) => {
    await page.goto("/exports?new=1");
    const form = page.getByRole("form", { name: "Request an export" });
    await form.getByLabel("From").fill("2026-03-01");
    await form.getByLabel("To (exclusive)").fill("2026-02-01");
    await form.getByRole("button", { name: "Request export" }).click();
    await expect(form.getByRole("alert")).toContainText("filter.to: must be after filter.from");
  });
});

test.describe("as gus (Globex member)", () => {
  test.use({ storageState: storageStateFor("gus@globex.test") });

  test("gets 404 for ada's job page and API", async ({ page, request, playwright }) => {
    const ada = await playwright.request.newContext({
      baseURL: test.info().project.use.baseURL,
      extraHTTPHeaders: { Authorization: `Bearer ${cliToken("ada@acme.test")}` },
    });
    const created = await ada.post("/api/v1/exports", { data: { dataset: "customers" } });
    expect(created.status()).toBe(202);
    const { id } = (await created.json()) as { id: string };
    await ada.dispose();
    const pageRes = await page.goto(`/jobs/${id}`);
    expect(pageRes?.status()).toBe(404);
    await expect(page.getByRole("heading", { name: "Not found" })).toBeVisible();
    for (const url of [`/api/v1/jobs/${id}`, `/api/v1/jobs/${id}/events`, `/api/v1/exports/${id}/download`]) {
      const res = await request.get(url);
      expect(res.status(), url).toBe(404);
    }
    const list = (await (await request.get("/api/v1/jobs?limit=100")).json()) as { jobs: { id: string }[] };
    expect(list.jobs.map((j) => j.id)).not.toContain(id);
  });
});

test("signing in with a wrong password says so", async ({ page }) => {
  await page.goto("/login");
  await page.getByLabel("E-mail").fill("ada@acme.test");
  await page.getByLabel("Password").fill(DEMO_PASSWORD + "x");
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByRole("alert").filter({ hasText: "Wrong e-mail or password" })).toBeVisible();
  await expect(page).toHaveURL(/\/login/);
});
