import { expect, test } from "./fixtures";
import { confirmDialog, storageStateFor } from "./helpers";

test.use({ storageState: storageStateFor("ada@acme.test") });

test("a token made on the settings page works once shown, and stops working when revoked", async ({
  page,
  playwright,
}) => {
  await page.goto("/settings");
  const name = `laptop-${Date.now()}`;
  await page.getByLabel("Token name").fill(name);
  await page.getByRole("button", { name: "Create token" }).click();
  const token = (await page.getByTestId("new-token").textContent())!.trim();
  expect(token).toMatch(/^cvy_/);

  const api = await playwright.request.newContext({
    baseURL: test.info().project.use.baseURL,
    extraHTTPHeaders: { Authorization: `Bearer ${token}` },
  });
  expect((await api.get("/api/v1/jobs")).status()).toBe(200);

  await page.getByRole("button", { name: `Revoke token ${name}` }).click();
  await confirmDialog(page, "Revoke token");
  await expect(page.getByRole("button", { name: `Revoke token ${name}` })).toHaveCount(0);
  expect((await api.get("/api/v1/jobs")).status()).toBe(401);
  await api.dispose();
});

test("a cross-site form post with ada's cookie is refused", async ({ request }) => {
  const res = await request.post("/api/v1/exports", {
    data: { dataset: "orders" },
    headers: { Origin: "https://evil.example", "Sec-Fetch-Site": "cross-site" },
  });
  expect(res.status()).toBe(403);
});
