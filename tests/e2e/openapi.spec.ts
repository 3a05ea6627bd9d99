import { expect, test } from "./fixtures";
import { storageStateFor } from "./helpers";

// The API's description: the OpenAPI document and its interactive reference, served from our own origin.

test("the OpenAPI document is public, cacheable and OpenAPI 3.1", async ({ playwright, baseURL }) => {
  const anonymous = await playwright.request.newContext({ baseURL });
  const res = await anonymous.get("/api/v1/openapi.json");
  expect(res.status()).toBe(200);
  expect(res.headers()["cache-control"]).toContain("public");
  const doc = (await res.json()) as { openapi: string; paths: Record<string, unknown> };
  expect(doc.openapi).toBe("3.1.0");
  expect(Object.keys(doc.paths)).toContain("/api/v1/exports");
  await anonymous.dispose();
});

test.describe("the API reference", () => {
  test.use({ storageState: storageStateFor("ada@acme.test") });

  test("is linked from the API tokens, renders the operations, and loads nothing from elsewhere", async ({
    page,
    baseURL,
  }) => {
    const origin = new URL(baseURL!).origin;
    const elsewhere: string[] = [];
    const refused: string[] = [];
    page.on("request", (r) => {
      if (!r.url().startsWith(origin) && !r.url().startsWith("data:") && !r.url().startsWith("blob:")) {
        elsewhere.push(r.url());
      }
    });
    page.on("console", (m) => {
      if (m.type() === "error" && /Content Security Policy|Refused to/i.test(m.text())) refused.push(m.text());
    });

    await page.goto("/settings");
    await page.getByRole("link", { name: "API reference" }).click();
    await expect(page).toHaveURL(/\/docs\/api$/);
    const reference = page.getByTestId("api-reference");
    // Scalar renders the operations by their summaries (the first tag open), from the document it fetched from this origin.
    // Its bundle is a few MB of JavaScript: alone the test takes ~9 s here, and a full run's two workers on two
    // cores once took Scalar past the 30 s default (its sidebar was in the DOM by the failure's screenshot).
    // This test is about what renders and from where, not how fast: the first render gets 60 s.
    await expect(reference.getByText("The tenant's jobs, newest first").first()).toBeVisible({ timeout: 60_000 });
    await expect(reference.getByText("Live progress of one job (Server-Sent Events)").first()).toBeVisible();
    await expect(reference.getByText("Webhooks", { exact: true }).first()).toBeVisible();
    expect(elsewhere, "requests to other origins").toEqual([]);
    expect(refused, "CSP refusals").toEqual([]);
  });
});
