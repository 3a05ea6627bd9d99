import type { Page } from "@playwright/test";
import { expect, test } from "./fixtures";
import { cliToken, expectAccessible, sidewaysOverflow, sql, storageStateFor } from "./helpers";

/**
 * Every page at phone width (390 × 844), as a member, an operator and a platform admin: nothing
 * makes the page scroll sideways (wide tables become cards), no table cell is cut off (its content
 * fits the cell, nothing inside it clips or ellipsises its text, and the cell ends inside the
 * screen), the navigation is a Menu that opens the same links in named sections with the current
 * one marked, and axe finds nothing grave.
 */
test.use({ viewport: { width: 390, height: 844 } });

/**
 * The visible table cells whose content is cut: the cell (or an element inside it that hides or
 * clips what overflows) is narrower than what it holds, or the cell runs past the screen's edge.
 * Cells of a header that is only there for screen readers (a card's labels) are not visible.
 */
async function clippedCells(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const width = window.innerWidth;
    const found: string[] = [];
    const name = (el: Element) => {
      const cls = typeof el.className === "string" ? el.className.slice(0, 50) : "";
      return `<${el.tagName.toLowerCase()}${cls ? ` class="${cls}"` : ""}>`;
    };
    const hidden = (el: Element) => {
      for (let up: Element | null = el; up && up !== document.body; up = up.parentElement) {
        const box = up.getBoundingClientRect();
        if (box.width <= 1 || box.height <= 1) return true;
        if (getComputedStyle(up).clipPath !== "none") return true;
      }
      return !el.checkVisibility({ checkVisibilityCSS: true });
    };
    for (const cell of document.querySelectorAll("main td, main th")) {
      if (hidden(cell)) continue;
      const text = (cell.textContent ?? "").trim().slice(0, 50);
      const box = cell.getBoundingClientRect();
      if (box.right > width + 1) found.push(`${name(cell)} "${text}" ends at ${Math.round(box.right)} px`);
      for (const el of [cell, ...cell.querySelectorAll("*")]) {
        const style = getComputedStyle(el);
        const clips = el === cell || ["hidden", "clip"].includes(style.overflowX) || style.textOverflow === "ellipsis";
        if (!clips || (el !== cell && hidden(el))) continue;
        if (el.scrollWidth > el.clientWidth + 1)
          found.push(
            `${name(el)} in a cell "${text}" holds ${el.scrollWidth} px in ${el.clientWidth} px${el === cell ? "" : " (clipped)"}`,
          );
      }
      if (found.length >= 8) break;
    }
    return found;
  });
}

async function checkPage(page: Page, path: string, current?: string): Promise<void> {
  await page.goto(path);
  await expect(page.locator("main h1").first()).toBeVisible();
  await expect(page.getByText(/^Loading/)).toHaveCount(0);
  const { over, culprits } = await sidewaysOverflow(page);
  expect(over, `${path} scrolls sideways by ${over} px at 390 px: ${culprits.join("; ")}`).toBeLessThanOrEqual(0);
  expect(await clippedCells(page), `${path}: table cells cut off at 390 px`).toEqual([]);
  // The links are behind the Menu button; Sign out too.
  await expect(page.getByRole("button", { name: "Sign out" })).toBeHidden();
  await page.getByRole("button", { name: "Menu" }).click();
  const nav = page.getByRole("navigation", { name: "Main" });
  await expect(nav.getByRole("button", { name: "Sign out" })).toBeVisible();
  // The sections, each under its heading.
  await expect(nav.getByRole("heading", { name: "Your work" })).toBeVisible();
  await expect(nav.getByRole("heading", { name: "Account" })).toBeVisible();
  if (current)
    await expect(nav.getByRole("link", { name: current, exact: true })).toHaveAttribute("aria-current", "page");
  await expectAccessible(page, `${path} at 390 px with the menu open`);
  await page.getByRole("button", { name: "Close menu" }).click();
}

/** The newest job of a tenant matching a condition (`j` is jobs), or null. */
async function newestJob(slug: string, where: string): Promise<string | null> {
  const [job] = await sql<{ id: string }>(
    `SELECT j.id FROM jobs j JOIN tenants t ON t.id = j.tenant_id
      WHERE t.slug = $1 AND ${where} ORDER BY j.created_at DESC LIMIT 1`,
    [slug],
  );
  return job?.id ?? null;
}

// What the tables show at their widest, whether or not other specs ran first: a dead job whose error is
// long and has a long unbroken word (a URL), and audit entries with details (a pause made and resumed).
const LONG_ERROR = `phone-e2e ${Date.now()}: upstream https://storage.example.com/buckets/conveyor-exports/tenants/acme/exports/2026/12/07/part-00017.csv.gz answered 503 Service Unavailable after 30000 ms`;
let deadId: string | null = null;
test.beforeAll(async ({ playwright }) => {
  const [row] = await sql<{ id: string }>(
    `INSERT INTO jobs (id, tenant_id, type, queue, status, input, input_hash, attempts, max_attempts,
                       error_class, error_message, finished_at, updated_at)
     SELECT gen_random_uuid(), id, 'probe', 'bulk', 'failed', '{"sleepMs": 0}', 'e2e', 3, 3, 'retryable', $1, now(), now()
     FROM tenants WHERE slug = 'acme' RETURNING id`,
    [LONG_ERROR],
  );
  deadId = row!.id;
  const api = await playwright.request.newContext({
    baseURL: test.info().project.use.baseURL,
    extraHTTPHeaders: { Authorization: `Bearer ${cliToken("oscar@acme.test")}` },
  });
  // A scope no other spec pauses (report jobs on every queue, Acme only), resumed at once.
  const made = await api.post("/api/v1/ops/pauses", {
    data: { type: "job_report", reason: `phone-e2e: a reason long enough to wrap on a phone ${Date.now()}` },
  });
  if (made.status() === 201) await api.delete(`/api/v1/ops/pauses/${((await made.json()) as { id: string }).id}`);
  await api.dispose();
});
test.afterAll(async () => {
  if (deadId) await sql("DELETE FROM jobs WHERE id = $1", [deadId]);
});

test.describe("the check itself", () => {
  test.use({ storageState: storageStateFor("oscar@acme.test") });

  test("finds a cell whose text is cut off, and one that runs off the screen", async ({ page }) => {
    await page.goto("/ops/audit");
    await expect(page.locator("main h1")).toBeVisible();
    await page.evaluate(() => {
      const table = document.createElement("table");
      table.innerHTML = `<tbody><tr>
        <td><div style="width: 80px; overflow: hidden; white-space: nowrap">a message far too long for its cell</div></td>
        <td><span style="display: block; width: 900px">wider than the screen</span></td>
      </tr></tbody>`;
      document.querySelector("main")!.append(table);
    });
    const found = await clippedCells(page);
    expect(found.some((f) => f.includes("a message far too long"))).toBe(true);
    expect(found.some((f) => f.includes("wider than the screen") && f.includes("ends at"))).toBe(true);
  });
});

test.describe("as ada (member)", () => {
  test.use({ storageState: storageStateFor("ada@acme.test") });

  for (const [path, label] of [
    ["/exports", "Exports"],
    ["/imports", "Imports"],
    ["/schedules", "Schedules"],
    ["/jobs", "My jobs"],
    ["/notifications", null],
    ["/settings", "Settings"],
    ["/settings/webhooks", "Webhooks"],
  ] as const) {
    test(`a member's page at phone width: ${path}`, async ({ page }) => {
      await checkPage(page, path, label ?? undefined);
    });
  }

  test("an export's page, and a failed job's page with its attempts", async ({ page }) => {
    const id =
      (await newestJob("acme", "j.type = 'export' AND j.parent_id IS NULL")) ??
      (
        (await (await page.request.post("/api/v1/exports", { data: { dataset: "customers" } })).json()) as {
          id: string;
        }
      ).id;
    await checkPage(page, `/jobs/${id}`, "My jobs");
    // A failed job's page: its attempts and their errors (tests running alongside make some).
    const failed = await newestJob("acme", "j.status = 'failed' AND j.type <> 'probe'");
    if (failed) await checkPage(page, `/jobs/${failed}`);
  });

  test("an import's timeline and its job page, when the tenant has one", async ({ page }) => {
    // tests/e2e/imports.spec.ts makes some when the whole suite runs.
    const imp = await newestJob("acme", "j.type = 'import'");
    test.skip(!imp, "no import in acme yet");
    await checkPage(page, `/imports?id=${imp}`, "Imports");
    await checkPage(page, `/jobs/${imp}`);
  });

  test("a schedule's page, with its next runs", async ({ page }) => {
    // One made here (paused: it never runs), deleted after.
    const res = await page.request.post("/api/v1/schedules", {
      data: {
        name: `phone ${Date.now()}`,
        cron: "0 3 * * *",
        timezone: "Europe/Berlin",
        task: "export",
        input: { dataset: "customers" },
        paused: true,
      },
    });
    expect(res.status(), await res.text()).toBe(201);
    const { id } = (await res.json()) as { id: string };
    try {
      await checkPage(page, `/schedules/${id}`, "Schedules");
    } finally {
      await page.request.delete(`/api/v1/schedules/${id}`);
    }
  });

  test("a webhook endpoint's page with its deliveries, when the tenant has one", async ({ page }) => {
    // tests/e2e/webhooks.spec.ts makes some when the whole suite runs.
    const [endpoint] = await sql<{ id: string }>(
      `SELECT e.id FROM webhook_endpoints e JOIN tenants t ON t.id = e.tenant_id
        WHERE t.slug = 'acme' ORDER BY e.created_at DESC LIMIT 1`,
    );
    test.skip(!endpoint, "no webhook endpoint in acme yet");
    await checkPage(page, `/settings/webhooks/${endpoint!.id}`, "Webhooks");
  });
});

test.describe("as oscar (operator)", () => {
  test.use({ storageState: storageStateFor("oscar@acme.test") });

  for (const [path, label] of [
    ["/ops/overview", "Overview"],
    ["/ops/jobs", "Jobs"],
    ["/ops/jobs?status=failed", "Jobs"],
    ["/ops/queues", "Queues"],
    ["/ops/dead-letters", "Dead letters"],
    ["/ops/schedules", "Tenant schedules"],
    // An operator is their tenant's member too: the tenant's endpoints are under Your work
    // (every tenant's, /ops/webhooks, is the platform admin's).
    ["/settings/webhooks", "Webhooks"],
    ["/ops/stuck", "Stuck"],
    ["/ops/audit", "Audit"],
    ["/ops/people", "People"],
  ] as const) {
    test(`the console at phone width: ${path}`, async ({ page }) => {
      await checkPage(page, path, label);
      await page.getByRole("button", { name: "Menu" }).click();
      await expect(
        page.getByRole("navigation", { name: "Main" }).getByRole("heading", { name: "Console" }),
      ).toBeVisible();
    });
  }

  test("a dead job's page and its row in the explorer, with its long error", async ({ page }) => {
    await checkPage(page, `/jobs/${deadId}`);
    await checkPage(page, `/ops/jobs?q=${encodeURIComponent(LONG_ERROR.slice(0, 30))}`, "Jobs");
    await expect(page.getByTestId("ops-job-error").first()).toContainText("answered 503 Service Unavailable");
  });
});

test.describe("as root (platform admin)", () => {
  test.use({ storageState: storageStateFor("root@conveyor.test") });

  for (const [path, label] of [
    ["/ops/workers", "Workers"],
    ["/ops/overview", "Overview"],
    ["/ops/jobs", "Jobs"],
    ["/ops/queues", "Queues"],
    ["/ops/dead-letters", "Dead letters"],
    ["/ops/schedules", "Tenant schedules"],
    ["/ops/webhooks", "Webhooks"],
    ["/ops/stuck", "Stuck"],
    ["/ops/audit", "Audit"],
    ["/ops/people", "People"],
  ] as const) {
    test(`every tenant's console at phone width: ${path}`, async ({ page }) => {
      await checkPage(page, path, label);
    });
  }
});
