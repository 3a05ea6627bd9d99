import { createHmac } from "node:crypto";
import type { Page } from "@playwright/test";
import { expect, test } from "./fixtures";
import { confirmDialog, storageStateFor } from "./helpers";
import { startReceiver, type Received } from "./webhook-receiver";

/** The Standard Webhooks signature of a request with a secret, as a receiver checks it. */
function signatureOf(secret: string, r: Received): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  const mac = createHmac("sha256", key)
    .update(`${String(r.headers["webhook-id"])}.${String(r.headers["webhook-timestamp"])}.${r.body}`)
    .digest("base64");
  return `v1,${mac}`;
}

/** Presses "Send test event" on an endpoint's page: the webhook-id of the message sent. */
async function sendTestEvent(page: Page): Promise<string> {
  const notice = page.getByTestId("webhook-notice");
  const before = (await notice.count()) ? await notice.textContent() : null;
  await page.getByRole("button", { name: "Send test event" }).click();
  await expect(notice).toContainText("Test event sent");
  if (before) await expect(notice).not.toHaveText(before);
  return /webhook-id (\S+?)\)/.exec((await notice.textContent()) ?? "")![1]!;
}

/** The page is no wider than the viewport (tables scroll inside their card). */
async function expectNoPageScroll(page: Page, what: string): Promise<void> {
  const [scroll, viewport] = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
  expect(scroll, `${what}: page width at ${viewport} px`).toBeLessThanOrEqual(viewport);
}

test.describe("as ada (Acme member)", () => {
  test.use({ storageState: storageStateFor("ada@acme.test") });

  test("adds an endpoint, sees its secret once, delivers a test event, follows a failing one, replays, rotates, disables and deletes", async ({
    page,
    browser,
    context,
  }) => {
    test.setTimeout(180_000);
    const receiver = await startReceiver();
    const path = `/hook-${Date.now()}`;
    const url = receiver.url(path);
    let endpointId: string | null = null;
    try {
      await context.grantPermissions(["clipboard-read", "clipboard-write"]);
      await page.goto("/settings");
      await page.getByRole("link", { name: "Manage webhooks" }).click();
      await expect(page.getByRole("heading", { name: "Webhooks", level: 1 })).toBeVisible();
      // The list comes first; the form opens from its button.
      await expect(page.getByRole("form", { name: "New endpoint" })).toHaveCount(0);
      await page.getByRole("button", { name: "New endpoint" }).click();
      const form = page.getByRole("form", { name: "New endpoint" });
      await expect(form.getByLabel("Rate limit (requests per second)")).toHaveValue("10");

      // The API's field errors, next to their fields.
      await form.getByLabel("URL").fill("ftp://hooks.example.com/in");
      await form.getByLabel("job.succeeded").uncheck();
      await form.getByRole("button", { name: "Add endpoint" }).click();
      await expect(form.getByText("must be an http or https URL")).toBeVisible();
      await expect(form.getByText("must name at least one event")).toBeVisible();
      await expect(form.getByLabel("URL")).toHaveAttribute("aria-invalid", "true");

      // Created: the secret, once, with a Copy button.
      await form.getByLabel("URL").fill(url);
      await form.getByLabel("job.succeeded").check();
      await form.getByLabel("Description (optional)").fill("e2e receiver");
      await form.getByRole("button", { name: "Add endpoint" }).click();
      const shown = page.getByTestId("new-secret");
      await expect(shown).toContainText("it is not shown again");
      const secret = (await shown.getByTestId("secret").textContent())!.trim();
      expect(secret).toMatch(/^whsec_[A-Za-z0-9+/=]{40,}$/);
      await shown.getByRole("button", { name: "Copy secret" }).click();
      await expect(shown.getByRole("button", { name: "Copied" })).toBeVisible();
      expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret);

      // The list shows it, with no requests yet; the secret is gone after a reload.
      const row = page.getByTestId("endpoint-row").filter({ hasText: url });
      await expect(row).toContainText("job.succeeded");
      await expect(row).toContainText("e2e receiver");
      await expect(row.getByTestId("success-rate")).toHaveText("no requests yet");
      await expect(row.getByTestId("circuit")).toHaveText("sending");
      await expect(row.getByTestId("delivery-counts")).toHaveText("0 pending · 0 failed");
      await expect(row.getByTestId("endpoint-state")).toHaveText("enabled");
      await expect(row).toContainText("10/s");
      endpointId = await row.getAttribute("data-endpoint-id");
      await page.setViewportSize({ width: 390, height: 844 });
      await expectNoPageScroll(page, "/settings/webhooks");
      await page.setViewportSize({ width: 1280, height: 720 });
      await page.reload();
      await expect(page.getByTestId("endpoint-row").filter({ hasText: url })).toBeVisible();
      await expect(page.getByTestId("new-secret")).toHaveCount(0);

      // Its page: a test event is delivered, signed with the secret.
      await page.getByRole("link", { name: url }).click();
      await expect(page.getByRole("heading", { name: url, level: 1 })).toBeVisible();
      // (Acme's other jobs may deliver job.succeeded here meanwhile: the test events are found by their webhook-id.)
      const deliveries = page.getByRole("region", { name: "Deliveries" });
      const pingId = await sendTestEvent(page);
      const first = deliveries.locator(`[data-message-id="${pingId}"]`);
      await expect(first.getByTestId("delivery-status")).toHaveText("delivered");
      await expect(first).toContainText("ping");
      await expect(first.getByTestId("delivery-requests")).toHaveText("1");
      await expect(first.getByTestId("delivery-last")).toHaveText("HTTP 200");
      const firstId = await first.getAttribute("data-delivery-id");
      expect(firstId).toBeTruthy();
      const ping = receiver.received.find((r) => r.path === path && r.headers["webhook-id"] === pingId)!;
      expect(ping).toBeTruthy();
      expect(String(ping.headers["webhook-signature"])).toBe(signatureOf(secret, ping));

      await first.getByRole("button", { name: "ping" }).click();
      const detail = deliveries.getByTestId("delivery-detail");
      await expect(detail.getByTestId("message-body")).toContainText('"type": "ping"');
      const attempt = detail.getByTestId("attempt");
      await expect(attempt).toHaveCount(1);
      await expect(attempt.getByTestId("attempt-status")).toHaveText("HTTP 200");
      await expect(attempt.getByTestId("attempt-body")).toHaveText('{"received":true}');
      await attempt.getByText("Response headers").click();
      await expect(attempt).toContainText("x-receiver: e2e");
      await attempt.getByText("Request headers").click();
      await expect(attempt).toContainText("webhook-signature: v1,");
      await page.setViewportSize({ width: 390, height: 844 });
      await expectNoPageScroll(page, "an endpoint's page with a delivery open");
      await page.setViewportSize({ width: 1280, height: 720 });
      await expect(page.getByRole("region", { name: "Health" }).getByTestId("success-rate")).toContainText(
        /^100% of \d+ request\(s\)/,
      );

      // Edit: the form holds its values; a bad rate limit is refused by the field; saved values show.
      await page.getByRole("button", { name: "Edit", exact: true }).click();
      const edit = page.getByRole("form", { name: "Edit endpoint" });
      await expect(edit.getByLabel("URL")).toHaveValue(url);
      await expect(edit.getByLabel("job.succeeded")).toBeChecked();
      await edit.getByLabel("Rate limit (requests per second)").fill("0");
      await edit.getByRole("button", { name: "Save changes" }).click();
      await expect(edit.getByLabel("Rate limit (requests per second)")).toHaveAttribute("aria-invalid", "true");
      await edit.getByLabel("Rate limit (requests per second)").fill("25");
      await edit.getByLabel("Description (optional)").fill("e2e receiver, edited");
      await edit.getByLabel("job.failed").check();
      await edit.getByRole("button", { name: "Save changes" }).click();
      await expect(edit).toHaveCount(0);
      const settings = page.getByRole("region", { name: "Settings" });
      await expect(settings).toContainText("25 requests per second");
      await expect(settings).toContainText("e2e receiver, edited");
      await expect(settings).toContainText("job.failed");

      // The receiver fails: the next delivery shows its failed requests and their answers; Replay says it is under way.
      receiver.state.failing = true;
      const failingId = await sendTestEvent(page);
      const failing = deliveries.locator(`[data-message-id="${failingId}"]`);
      await expect(failing.getByTestId("delivery-last")).toHaveText("HTTP 500");
      await expect(failing.getByTestId("delivery-status")).toHaveText("pending");
      await failing.getByRole("button", { name: "ping" }).click();
      const failed = deliveries.getByTestId("delivery-detail");
      await expect(failed).toHaveCount(1);
      // The open delivery is in the URL: wait for it to be this one before acting on it.
      await expect(failed).toContainText(failingId);
      await expect.poll(() => failed.getByTestId("attempt").count(), { timeout: 30_000 }).toBeGreaterThanOrEqual(2);
      await expect(failed.getByTestId("attempt-status").first()).toHaveText("HTTP 500");
      await expect(failed.getByTestId("attempt-body").first()).toHaveText("receiver down for maintenance");
      // Pending: it retries on its own; Replay waits for it to end, and says so.
      await expect(failed.getByTestId("delivery-why")).toContainText("Not delivered yet: the last answer was HTTP 500");
      await expect(failed.getByRole("button", { name: "Replay" })).toBeDisabled();
      await expect(failed).toContainText("Replay is possible once this delivery has ended.");
      await expect(failing.getByTestId("delivery-requests")).toContainText(/^\d of 8$/);

      // It recovers: the retry gets through.
      receiver.state.failing = false;
      await expect(failing.getByTestId("delivery-status")).toHaveText("delivered", { timeout: 60_000 });
      await expect(failing.getByTestId("delivery-last")).toHaveText("HTTP 200");

      // Status filter.
      await deliveries.getByLabel("Status").selectOption("failed");
      await expect(page).toHaveURL(/status=failed/);
      await expect(deliveries.getByText("No failed deliveries.")).toBeVisible();
      await deliveries.getByLabel("Status").selectOption("delivered");
      await expect(deliveries.getByTestId("delivery-row").filter({ hasText: "ping" })).toHaveCount(2);
      await deliveries.getByLabel("Status").selectOption("");

      // Rotate: the new secret once; during the overlap both secrets sign. Replay sends the first message again.
      await page.getByRole("button", { name: "Rotate secret" }).click();
      await confirmDialog(page, "Rotate secret");
      const rotated = page.getByTestId("new-secret");
      const secret2 = (await rotated.getByTestId("secret").textContent())!.trim();
      expect(secret2).toMatch(/^whsec_/);
      expect(secret2).not.toBe(secret);
      await expect(page.getByTestId("rotation-note")).toContainText("keeps signing too for 24 h, until");
      const replayed = deliveries.locator(`[data-delivery-id="${firstId}"]`);
      await replayed.getByRole("button", { name: "ping" }).click();
      await expect(deliveries.getByTestId("delivery-detail")).toContainText(pingId);
      await deliveries.getByTestId("delivery-detail").getByRole("button", { name: "Replay" }).click();
      await expect(deliveries.getByTestId("replay-result")).toContainText("Replayed");
      await expect(replayed.getByTestId("delivery-requests")).toHaveText("2");
      await expect(replayed.getByTestId("delivery-status")).toHaveText("delivered");
      const again = receiver.received.filter((r) => r.headers["webhook-id"] === ping.headers["webhook-id"]);
      expect(again).toHaveLength(2);
      expect(String(again[1]!.headers["webhook-signature"]).split(" ")).toEqual([
        signatureOf(secret2, again[1]!),
        signatureOf(secret, again[1]!),
      ]);

      // Recover: nothing failed for good.
      await page.getByLabel("Failed since").fill("2020-01-01T00:00:00");
      await page.getByRole("button", { name: "Recover failed since…" }).click();
      await expect(page.getByTestId("recover-result")).toHaveText("0 failed delivery(ies) sent again.");

      // Another tenant's user: the endpoint does not exist for them.
      const gus = await browser.newContext({ storageState: storageStateFor("gus@globex.test") });
      try {
        const res = await gus.request.get(`/api/v1/webhooks/endpoints/${endpointId}`);
        expect(res.status()).toBe(404);
        const theirs = await gus.request.get(`/api/v1/webhooks/endpoints/${endpointId}/deliveries`);
        expect(theirs.status()).toBe(404);
        const gusPage = await gus.newPage();
        const answer = await gusPage.goto(`/settings/webhooks/${endpointId}`);
        expect(answer?.status()).toBe(404);
      } finally {
        await gus.close();
      }

      // Disable: shown with its reason; no test event while disabled. Enable again.
      await page.getByRole("button", { name: "Disable", exact: true }).click();
      await expect(page.getByTestId("endpoint-state")).toHaveText("disabled");
      await expect(page.getByTestId("disabled-reason")).toHaveText("Disabled by a member");
      await expect(page.getByRole("button", { name: "Send test event" })).toBeDisabled();
      await page.goto("/settings/webhooks");
      const listed = page.locator(`[data-endpoint-id="${endpointId}"]`);
      await expect(listed.getByTestId("endpoint-state")).toHaveText("disabled");
      await expect(listed.getByTestId("disabled-reason")).toHaveText("Disabled by a member");
      await listed.getByRole("link", { name: url }).click();
      await page.getByRole("button", { name: "Enable", exact: true }).click();
      await expect(page.getByTestId("endpoint-state")).toHaveText("enabled");

      // Delete, after a confirmation.
      await page.getByRole("button", { name: "Delete", exact: true }).click();
      await confirmDialog(page, "Delete endpoint");
      await expect(page).toHaveURL(/\/settings\/webhooks$/);
      await expect(page.locator(`[data-endpoint-id="${endpointId}"]`)).toHaveCount(0);
      expect((await page.request.get(`/api/v1/webhooks/endpoints/${endpointId}`)).status()).toBe(404);
      endpointId = null;
    } finally {
      if (endpointId) await page.request.delete(`/api/v1/webhooks/endpoints/${endpointId}`);
      await receiver.close();
    }
  });
});

test.describe("as oscar (Acme operator)", () => {
  test.use({ storageState: storageStateFor("oscar@acme.test") });

  test("the console lists Acme's endpoints with their health and opens one", async ({ page }) => {
    const url = `https://hooks.example.com/console-${Date.now()}`;
    const res = await page.request.post("/api/v1/webhooks/endpoints", {
      data: { url, events: ["job.failed", "export.ready"] },
    });
    expect(res.status(), await res.text()).toBe(201);
    const { endpoint } = (await res.json()) as { endpoint: { id: string } };
    try {
      // An operator of Acme is its member too: one "Webhooks" entry, Acme's endpoints.
      await page.goto("/exports");
      await page.getByRole("link", { name: "Webhooks", exact: true }).click();
      await expect(page).toHaveURL(/\/settings\/webhooks$/);
      await expect(page.getByRole("heading", { name: "Webhooks", level: 1 })).toBeVisible();
      const row = page.locator(`[data-endpoint-id="${endpoint.id}"]`);
      await expect(row).toContainText("job.failed");
      // Acme jobs failing in other tests (in parallel) may already have been delivered to it: the health is shown either way.
      await expect(row.getByTestId("success-rate")).toHaveText(/^(no requests yet|\d+% of \d+ request\(s\) in 24 h)$/);
      await expect(row.getByTestId("delivery-counts")).toContainText(/\d+ pending · \d+ failed/);
      await expect(page.getByRole("columnheader", { name: "Tenant" })).toHaveCount(0);
      await page.setViewportSize({ width: 390, height: 844 });
      await expectNoPageScroll(page, "/ops/webhooks");
      await page.setViewportSize({ width: 1280, height: 720 });
      await row.getByRole("link", { name: url }).click();
      await expect(page.getByRole("heading", { name: url, level: 1 })).toBeVisible();
      // Its deliveries: none yet, or those of Acme jobs that other specs made fail meanwhile.
      await expect(page.getByText("No deliveries yet").or(page.getByTestId("delivery-row").first())).toBeVisible();
    } finally {
      await page.request.delete(`/api/v1/webhooks/endpoints/${endpoint.id}`);
    }
  });
});

test.describe("as root (platform admin)", () => {
  test.use({ storageState: storageStateFor("root@conveyor.test") });

  test("the console lists every tenant's endpoints, with their tenant", async ({ page, browser }) => {
    const gus = await browser.newContext({ storageState: storageStateFor("gus@globex.test") });
    const url = `https://hooks.example.com/admin-${Date.now()}`;
    const res = await gus.request.post("/api/v1/webhooks/endpoints", {
      data: { url, events: ["job.succeeded"] },
    });
    expect(res.status(), await res.text()).toBe(201);
    const { endpoint } = (await res.json()) as { endpoint: { id: string } };
    try {
      await page.goto("/ops/webhooks");
      const row = page.locator(`[data-endpoint-id="${endpoint.id}"]`);
      await expect(row).toContainText("globex");
      await page.getByRole("combobox", { name: "Tenant" }).selectOption("acme");
      await expect(page).toHaveURL(/tenant=acme/);
      await expect(row).toHaveCount(0);
      await page.getByRole("combobox", { name: "Tenant" }).selectOption("globex");
      await row.getByRole("link", { name: url }).click();
      await expect(page.getByRole("heading", { name: url, level: 1 })).toBeVisible();
    } finally {
      await gus.request.delete(`/api/v1/webhooks/endpoints/${endpoint.id}`, {});
      await gus.close();
    }
  });
});
