import { expect, test as setup } from "./fixtures";
import { DEMO_PASSWORD, storageStateFor } from "./helpers";

for (const who of ["ada@acme.test", "oscar@acme.test", "gus@globex.test", "gina@globex.test", "root@conveyor.test"]) {
  setup(`sign in as ${who}`, async ({ page }) => {
    await page.goto("/login");
    await page.getByLabel("E-mail").fill(who);
    await page.getByLabel("Password").fill(DEMO_PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
    // Operators and platform admins land on the console's overview, members on their first page.
    const landing =
      who.startsWith("oscar") || who.startsWith("gina") || who.startsWith("root") ? "Overview" : "Exports";
    await expect(page.getByRole("heading", { name: landing, exact: true, level: 1 })).toBeVisible();
    await expect(page.getByTestId("whoami")).toContainText(who);
    await page.context().storageState({ path: storageStateFor(who) });
  });
}
