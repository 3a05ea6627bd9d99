import type { BrowserContext } from "@playwright/test";
import { expect, test } from "./fixtures";
import { expectAccessible, storageStateFor } from "./helpers";
import { task, WIDTHS } from "./task";
import { startReceiver } from "./webhook-receiver";

/**
 * A member's task: "did a webhook delivery fail, and retry it", walked from where they start
 * (any page, the main navigation) at 1280 and 390 px. Each width has its own endpoint whose
 * receiver answered HTTP 500 to every request of the schedule, so its delivery failed for good
 * (WEBHOOK_RETRY_SCALE makes the schedule seconds; the circuit's pauses make it a few minutes,
 * once, for both widths at the same time).
 */

type Failed = { endpointId: string; url: string; deliveryId: string };

let receiver: Awaited<ReturnType<typeof startReceiver>>;
const failed = new Map<string, Failed>();
let ada: BrowserContext;

test.describe("as ada (Acme member): did a webhook delivery fail, and retry it", () => {
  test.use({ storageState: storageStateFor("ada@acme.test") });

  test.beforeAll(async ({ browser }) => {
    test.setTimeout(420_000);
    receiver = await startReceiver();
    receiver.state.failing = true;
    ada = await browser.newContext({ storageState: storageStateFor("ada@acme.test") });
    for (const w of WIDTHS) {
      const url = receiver.url(`/task-${w.name}-${Date.now()}`);
      // export.ready only: other specs' Acme jobs do not add deliveries to it.
      const res = await ada.request.post("/api/v1/webhooks/endpoints", {
        data: { url, events: ["export.ready"], description: `failing receiver (${w.name})` },
      });
      expect(res.status(), await res.text()).toBe(201);
      const { endpoint } = (await res.json()) as { endpoint: { id: string } };
      const sent = await ada.request.post(`/api/v1/webhooks/endpoints/${endpoint.id}/test`);
      expect(sent.status(), await sent.text()).toBe(202);
      const { deliveryId } = (await sent.json()) as { deliveryId: string };
      failed.set(w.name, { endpointId: endpoint.id, url, deliveryId });
    }
    await expect
      .poll(
        async () => {
          const states: string[] = [];
          for (const f of failed.values()) {
            const d = await ada.request.get(`/api/v1/webhooks/deliveries/${f.deliveryId}`);
            states.push(((await d.json()) as { status: string }).status);
          }
          return states;
        },
        { timeout: 400_000, intervals: [2_000] },
      )
      .toEqual(["failed", "failed"]);
  });

  test.afterAll(async () => {
    for (const f of failed.values()) await ada?.request.delete(`/api/v1/webhooks/endpoints/${f.endpointId}`);
    await ada?.close();
    await receiver?.close();
  });

  for (const w of WIDTHS) {
    test(`finds the failed delivery, sees why, replays it once the receiver is back (${w.viewport.width} px)`, async ({
      page,
    }, testInfo) => {
      const f = failed.get(w.name)!;
      await page.setViewportSize(w.viewport);
      const t = task(page, testInfo, "did a webhook delivery fail, and retry it");

      // Where a member starts: any page, the main navigation (its Menu on a phone).
      await page.goto("/exports");
      const menu = page.getByRole("button", { name: "Menu" });
      if (await menu.isVisible()) await t.click(menu);
      await t.click(page.getByRole("link", { name: "Webhooks", exact: true }));
      await expect(page.getByRole("heading", { name: "Webhooks", level: 1 })).toBeVisible();

      // The endpoints list says which endpoint has failed deliveries, and why it may be paused.
      const row = page.locator(`[data-endpoint-id="${f.endpointId}"]`);
      await expect(row.getByTestId("failed-link")).toHaveText("1 failed");
      if ((await row.getByTestId("circuit").textContent()) !== "sending")
        await expect(row.getByTestId("circuit-meaning")).toContainText("Nothing is lost");
      await expectAccessible(page, `the webhooks list at ${w.viewport.width} px`);
      await t.shot("the endpoints, with the failed count");

      // Its failed deliveries (the filter is in the URL), each with its last answer, on a phone too.
      await t.click(row.getByTestId("failed-link"));
      await expect(page).toHaveURL(new RegExp(`/settings/webhooks/${f.endpointId}\\?status=failed`));
      const deliveries = page.getByRole("region", { name: "Deliveries" });
      const delivery = deliveries.locator(`[data-delivery-id="${f.deliveryId}"]`);
      await expect(delivery.getByTestId("delivery-status")).toHaveText("failed");
      await expect(delivery.getByTestId("delivery-requests")).toHaveText("8 of 8");
      await expect(delivery.getByTestId("delivery-last")).toContainText("HTTP 500");
      for (const cell of ["delivery-last", "delivery-next"]) {
        const box = await delivery.getByTestId(cell).boundingBox();
        expect(box, `${cell} is shown`).not.toBeNull();
        expect(box!.x + box!.width, `${cell} fits the screen`).toBeLessThanOrEqual(w.viewport.width);
      }
      await expectAccessible(page, `an endpoint's failed deliveries at ${w.viewport.width} px`);
      await t.shot("the failed deliveries");

      // Why: every request, in the order they were sent, with the receiver's answer.
      await t.click(delivery.getByRole("button", { name: /^ping, failed/ }));
      const detail = deliveries.getByTestId("delivery-detail");
      await expect(detail.getByTestId("delivery-why")).toContainText("Your endpoint failed every request (8 of 8)");
      await expect(detail.getByTestId("delivery-why")).toContainText("HTTP 500");
      await expect(detail.getByTestId("attempt")).toHaveCount(8);
      await expect(detail.getByTestId("attempt").first()).toContainText("Request 1");
      await expect(detail.getByTestId("attempt-body").first()).toHaveText("receiver down for maintenance");
      await expectAccessible(page, `a failed delivery at ${w.viewport.width} px`);
      await t.shot("why it failed");

      // The receiver is back: Replay. The delivery stays in view (it is no longer "failed") and is seen delivered.
      receiver.state.failing = false;
      await t.click(detail.getByRole("button", { name: "Replay" }));
      await expect(detail.getByTestId("replay-result")).toContainText("Replayed");
      await expect(detail.getByTestId("delivery-status")).toHaveText("delivered");
      await expect(detail.getByTestId("delivery-why")).toContainText("Delivered: your endpoint answered HTTP 200");
      await expect(detail.getByTestId("replay-result")).toBeVisible();
      await expect(delivery).toHaveCount(0);
      await expectAccessible(page, `a replayed delivery at ${w.viewport.width} px`);
      await t.shot("replayed and delivered");

      const clicks = await t.done();
      // Webhooks → the failed count → the delivery → Replay (and the Menu on a phone).
      expect(clicks).toBeLessThanOrEqual(w.name === "phone" ? 5 : 4);
    });
  }
});
