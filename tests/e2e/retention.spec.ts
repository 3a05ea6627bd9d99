import { expect, test } from "./fixtures";
import { expectAccessible, sql, storageStateFor } from "./helpers";

// A platform admin sets one tenant's retention in the console (People → Retention of …).

test.describe("as root (platform admin)", () => {
  test.use({ storageState: storageStateFor("root@conveyor.test") });

  test("sets a tenant's job, dead-letter and audit retention, and puts one back to the default", async ({ page }) => {
    await page.goto("/ops/people");
    // The tenants are loaded (the first one's form is shown) before another is picked.
    await expect(page.getByRole("form", { name: /^Retention of / })).toBeVisible();
    await page.getByRole("combobox", { name: "Tenant", exact: true }).selectOption("globex");
    const form = page.getByRole("form", { name: "Retention of globex" });
    await expect(form.getByLabel("Finished jobs (days)")).toHaveAttribute("placeholder", "default: 30");
    await expect(form.getByLabel("Dead letters (days)")).toHaveAttribute("placeholder", "default: 90");
    await expect(form.getByLabel("Audit entries (days)")).toHaveAttribute("placeholder", "default: 365");
    await form.getByLabel("Finished jobs (days)").fill("45");
    await form.getByLabel("Dead letters (days)").fill("120");
    await form.getByRole("button", { name: "Save retention" }).click();
    await expect(form.getByRole("status")).toContainText("Saved");
    const [row] = await sql<{ job: number | null; dead: number | null; audit: number | null }>(
      `SELECT job_retention_days AS job, dead_letter_retention_days AS dead, audit_retention_days AS audit
         FROM tenants WHERE slug = 'globex'`,
    );
    expect(row).toEqual({ job: 45, dead: 120, audit: null });
    const [audit] = await sql<{ details: unknown }>(
      `SELECT details FROM audit_logs WHERE action = 'tenant.settings' ORDER BY id DESC LIMIT 1`,
    );
    expect(audit?.details).toEqual({ jobRetentionDays: 45, deadLetterRetentionDays: 120, auditRetentionDays: null });
    await expectAccessible(page, "/ops/people with the retention form");

    // Emptied: back to the platform default.
    await page.reload();
    await page.getByRole("combobox", { name: "Tenant", exact: true }).selectOption("globex");
    await expect(form.getByLabel("Finished jobs (days)")).toHaveValue("45");
    await form.getByLabel("Finished jobs (days)").fill("");
    await form.getByLabel("Dead letters (days)").fill("");
    await form.getByRole("button", { name: "Save retention" }).click();
    await expect(form.getByRole("status")).toContainText("Saved");
    const [reset] = await sql<{ job: number | null; dead: number | null }>(
      `SELECT job_retention_days AS job, dead_letter_retention_days AS dead FROM tenants WHERE slug = 'globex'`,
    );
    expect(reset).toEqual({ job: null, dead: null });
  });
});

test.describe("as oscar (operator)", () => {
  test.use({ storageState: storageStateFor("oscar@acme.test") });

  test("sees no retention form, and the API refuses him", async ({ page }) => {
    await page.goto("/ops/people");
    await expect(page.getByRole("form", { name: "Invite someone" })).toBeVisible();
    await expect(page.getByRole("form", { name: /^Retention of/ })).toHaveCount(0);
    const res = await page.request.patch("/api/v1/ops/tenants/acme", { data: { jobRetentionDays: 3 } });
    expect(res.status()).toBe(403);
  });
});
