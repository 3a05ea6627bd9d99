import type { Page } from "@playwright/test";
import { expect, test } from "./fixtures";
import { cliToken, sessionHeaders, confirmDialog, expectAccessible, sql, storageStateFor } from "./helpers";

// Accounts, sign-in throttling, quotas and hostile content, as people meet them in the browser.

const PAYLOAD = `<img src=x onerror="window.__xss=1"><script>window.__xss=1</script>"'><svg onload=window.__xss=1>`;

/** No script of a payload ran and no dialog opened on the page. */
async function expectNoScriptRan(page: Page, dialogs: string[]): Promise<void> {
  expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
  expect(dialogs).toEqual([]);
}

test("every page carries a nonce-based CSP without 'unsafe-inline' for scripts, and HSTS", async ({ request }) => {
  const res = await request.get("/login");
  const csp = res.headers()["content-security-policy"] ?? "";
  const scriptSrc = csp.split(";").find((d) => d.trim().startsWith("script-src")) ?? "";
  expect(scriptSrc).toMatch(/'nonce-[A-Za-z0-9+/=]{16,}'/);
  expect(scriptSrc).not.toContain("unsafe-inline");
  expect(res.headers()["strict-transport-security"]).toMatch(/max-age=\d+/);
  const again = await request.get("/login");
  expect(again.headers()["content-security-policy"]).not.toBe(csp);
});

test("a request body over 64 KiB answers 413 before it is read", async ({ request }) => {
  const token = cliToken("ada@acme.test");
  const res = await request.post("/api/v1/exports", {
    headers: { Authorization: `Bearer ${token}` },
    data: { dataset: "orders", pad: "x".repeat(70 * 1024) },
  });
  expect(res.status()).toBe(413);
  expect(((await res.json()) as { error: { code: string } }).error.code).toBe("payload_too_large");
});

test("after five wrong passwords the form says how long to wait; the server answers 429 with Retry-After", async ({
  browser,
}) => {
  const context = await browser.newContext({ storageState: { cookies: [], origins: [] } });
  const page = await context.newPage();
  const wrong = async () => {
    await page.goto("/login");
    await page.getByLabel("E-mail").fill("gus@globex.test");
    await page.getByLabel("Password").fill("not his password");
    await page.getByRole("button", { name: "Sign in" }).click();
  };
  for (let i = 0; i < 4; i++) {
    await wrong();
    await expect(page.getByRole("main").getByRole("alert")).toHaveText("Wrong e-mail or password.");
  }
  await wrong();
  await expect(page.getByRole("main").getByRole("alert")).toContainText(/Too many failed sign-ins .* Wait \d+ seconds/);
  // The credentials endpoint itself refuses further tries for this account and address.
  const csrf = (await (await page.request.get("/api/auth/csrf")).json()) as { csrfToken: string };
  const direct = await page.request.post("/api/auth/callback/credentials", {
    form: { email: "gus@globex.test", password: "conveyor-demo", csrfToken: csrf.csrfToken },
    maxRedirects: 0,
  });
  expect(direct.status()).toBe(429);
  expect(Number(direct.headers()["retry-after"])).toBeGreaterThan(0);
  await sql("DELETE FROM sign_in_throttle WHERE key LIKE 'acct:gus@globex.test%'");
  await context.close();
});

test.describe("as oscar (operator)", () => {
  test.use({ storageState: storageStateFor("oscar@acme.test") });

  test("invites a member; the link sets her password; she signs in; he makes her an operator", async ({
    page,
    browser,
  }) => {
    const email = `new-${Date.now()}@acme.test`;
    await page.goto("/ops/people");
    await page.getByLabel("E-mail").fill(email);
    await page.getByRole("button", { name: "Invite", exact: true }).click();
    const link = (await page.getByTestId("invite-link").textContent())!.trim();
    expect(link).toMatch(/\/invite\/inv_/);
    await expect(page.getByTestId("invite").filter({ hasText: email })).toContainText("pending");
    // The form is empty again for the next person.
    await expect(page.getByLabel("E-mail")).toHaveValue("");
    await expectAccessible(page, "/ops/people");

    const guest = await browser.newContext({ storageState: { cookies: [], origins: [] } });
    const her = await guest.newPage();
    await her.goto(new URL(link).pathname);
    await expect(her.getByText(`invited to Acme Corporation as a member, as ${email}`)).toBeVisible();
    await expectAccessible(her, "the invitation page");
    await her.getByLabel("Your name").fill("Nia New");
    // The browser itself refuses a short password (minlength); the server's own check is in accounts.test.ts.
    await expect(her.getByLabel("Password", { exact: true })).toHaveAttribute("minlength", "12");
    await her.getByLabel("Password", { exact: true }).fill("nia's long password");
    await her.getByLabel("The same password again").fill("nia's other password");
    await her.getByRole("button", { name: "Create my account" }).click();
    await expect(her.locator("#confirm-error")).toContainText("the two passwords differ");
    await her.getByLabel("Your name").fill("Nia New");
    await her.getByLabel("Password", { exact: true }).fill("nia's long password");
    await her.getByLabel("The same password again").fill("nia's long password");
    await her.getByRole("button", { name: "Create my account" }).click();
    // The same words whether or not the e-mail had an account: the page never tells.
    await expect(her.getByRole("status")).toContainText("Sign in to finish joining");
    await her.getByLabel("E-mail").fill(email);
    await her.getByLabel("Password").fill("nia's long password");
    await her.getByRole("button", { name: "Sign in" }).click();
    // Back on the invitation: she has joined.
    await expect(her.getByRole("status")).toContainText("You have joined Acme Corporation");
    await her.getByRole("link", { name: "Continue" }).click();
    await expect(her.getByTestId("whoami")).toContainText(`${email} · acme (member)`);
    await guest.close();
    // The link works once: to anyone else it is used.
    const stranger = await browser.newContext({ storageState: { cookies: [], origins: [] } });
    const them = await stranger.newPage();
    await them.goto(new URL(link).pathname);
    await expect(them.getByRole("main").getByRole("alert")).toContainText("already used");
    await stranger.close();

    await page.reload();
    const row = page.getByTestId("member").filter({ hasText: email });
    await row.getByRole("button", { name: `Make ${email} an operator` }).click();
    await expect(row.getByTestId("member-role")).toHaveText("operator");
    const audit = await sql<{ action: string }>(
      "SELECT action FROM audit_logs WHERE details->>'email' = $1 ORDER BY id",
      [email],
    );
    expect(audit.map((a) => a.action)).toEqual(["user.invite", "user.invite_accept", "user.role"]);
  });

  test("hostile text in a job's error, a cancel reason and a filter renders as text, and no script runs", async ({
    page,
  }) => {
    const dialogs: string[] = [];
    page.on("dialog", (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    const [dead] = await sql<{ id: string }>(
      `INSERT INTO jobs (id, tenant_id, type, queue, status, input, input_hash, attempts, max_attempts,
                         error_class, error_message, finished_at, updated_at)
       SELECT gen_random_uuid(), id, 'probe', 'bulk', 'failed', jsonb_build_object('note', $1::text), 'x', 1, 1,
              'permanent', $1, now(), now() FROM tenants WHERE slug = 'acme' RETURNING id`,
      [PAYLOAD],
    );
    await page.goto(`/jobs/${dead!.id}`);
    await expect(page.getByTestId("job-outcome")).toContainText(PAYLOAD);
    await expectNoScriptRan(page, dialogs);
    await page.goto(`/ops/jobs?q=${encodeURIComponent(PAYLOAD)}`);
    await expect(page.getByLabel("Search input and errors")).toHaveValue(PAYLOAD);
    await page.goto("/ops/dead-letters");
    await expect(page.getByTestId("dead-letter-group").filter({ hasText: "onerror" }).first()).toBeVisible();
    await expectNoScriptRan(page, dialogs);
  });
});

test.describe("as root (platform admin)", () => {
  test.use({ storageState: storageStateFor("root@conveyor.test") });

  test("a tenant named with markup is shown as text everywhere; a pause reason too", async ({ page }) => {
    const dialogs: string[] = [];
    page.on("dialog", (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    const slug = `x${Date.now()}`;
    const created = await page.request.post("/api/v1/ops/tenants", { data: { slug, name: PAYLOAD } });
    expect(created.status()).toBe(201);
    const pause = await page.request.post("/api/v1/ops/pauses", { data: { tenant: slug, reason: PAYLOAD } });
    expect(pause.status()).toBe(201);
    for (const path of ["/ops/people", "/ops/queues"]) {
      await page.goto(path);
      await expect(page.locator("main")).toContainText(PAYLOAD);
      await expectNoScriptRan(page, dialogs);
    }
    const { id } = (await pause.json()) as { id: string };
    await page.request.delete(`/api/v1/ops/pauses/${id}`);
  });

  test("creates a tenant on the People page: it is shown, and the form is empty again", async ({ page }) => {
    const slug = `t${Date.now()}`;
    await page.goto("/ops/people");
    const form = page.getByRole("form", { name: "Create a tenant" });
    await form.getByLabel("New tenant: slug").fill(slug);
    await form.getByLabel("Name").fill("Tenant From The Form");
    await form.getByRole("button", { name: "Create tenant" }).click();
    await expect(page.getByRole("combobox", { name: "Tenant", exact: true })).toHaveValue(slug);
    await expect(page.getByRole("heading", { name: `Invite someone to ${slug}` })).toBeVisible();
    await expect(form.getByLabel("New tenant: slug")).toHaveValue("");
    await expect(form.getByLabel("Name")).toHaveValue("");
  });
});

test.describe("as ada (member)", () => {
  test.use({ storageState: storageStateFor("ada@acme.test") });

  test("the export form says which quota is used up", async ({ browser }) => {
    // A tenant of its own, so that no other test's exports count or wait.
    const root = { Authorization: `Bearer ${cliToken("root@conveyor.test")}`, "content-type": "application/json" };
    const base = test.info().project.use.baseURL!;
    const slug = `quota${Date.now()}`;
    const email = `q@${slug}.test`;
    expect(
      (
        await fetch(`${base}/api/v1/ops/tenants`, {
          method: "POST",
          headers: root,
          body: JSON.stringify({ slug, name: "Quota Co" }),
        })
      ).status,
    ).toBe(201);
    const invite = (await (
      await fetch(`${base}/api/v1/invites`, {
        method: "POST",
        headers: sessionHeaders("root@conveyor.test", base),
        body: JSON.stringify({ email, tenant: slug }),
      })
    ).json()) as { link: string };
    await fetch(`${base}/api/v1/invites/accept`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        token: invite.link.split("/invite/")[1],
        name: "Quinn",
        password: "quinn's long password",
      }),
    });
    await sql("UPDATE tenants SET quota_jobs_per_user = 1 WHERE slug = $1", [slug]);
    // Held by a pause of this tenant only: the first export stays unfinished.
    await sql(
      `INSERT INTO queue_pauses (id, queue, tenant_id, reason) SELECT gen_random_uuid(), 'interactive', id, 'quota e2e'
       FROM tenants WHERE slug = $1`,
      [slug],
    );
    const context = await browser.newContext({ storageState: { cookies: [], origins: [] } });
    const page = await context.newPage();
    await page.goto("/login");
    await page.getByLabel("E-mail").fill(email);
    await page.getByLabel("Password").fill("quinn's long password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("link", { name: "New export" }).click();
    await page.getByRole("button", { name: "Request export" }).click();
    await expect(page.getByRole("status").filter({ hasText: "Export queued" })).toBeVisible();
    await page.getByRole("button", { name: "Request export" }).click();
    await expect(page.getByRole("alert").filter({ hasText: "Quota exceeded" })).toContainText(
      "at most 1 unfinished jobs per user",
    );
    await context.close();
  });

  test("changes her password on the settings page; the next sign-in uses the new one", async ({ browser }) => {
    // A separate account, so that the other specs' stored sessions stay valid.
    const email = `pw-${Date.now()}@acme.test`;
    const link = (
      await (
        await fetch(`${test.info().project.use.baseURL}/api/v1/invites`, {
          method: "POST",
          headers: sessionHeaders("oscar@acme.test", test.info().project.use.baseURL!),
          body: JSON.stringify({ email }),
        })
      ).json()
    ).link as string;
    const context = await browser.newContext({ storageState: { cookies: [], origins: [] } });
    const page = await context.newPage();
    const accepted = await page.request.post("/api/v1/invites/accept", {
      data: { token: link.split("/invite/")[1], name: "Pat", password: "first long password" },
    });
    expect(accepted.status(), await accepted.text()).toBe(200);
    await page.goto("/login");
    await page.getByLabel("E-mail").fill(email);
    await page.getByLabel("Password").fill("first long password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect(page.getByTestId("whoami")).toContainText(email);
    await page.goto("/settings");
    await page.getByLabel("Current password").fill("first long password");
    await page.getByLabel(/^New password/).fill("second long password");
    await page.getByLabel("The new password again").fill("second long password");
    await page.getByRole("button", { name: "Change password" }).click();
    await expect(page).toHaveURL(/\/login/);
    await page.getByLabel("E-mail").fill(email);
    await page.getByLabel("Password").fill("second long password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect(page.getByTestId("whoami")).toContainText(email);
    await context.close();
  });

  test("a read-only token made on the settings page may read, not write", async ({ page }) => {
    await page.goto("/settings");
    await page.getByLabel("Token name").fill("read-only e2e");
    await page.getByLabel("write").uncheck();
    await page.getByRole("button", { name: "Create token" }).click();
    const token = (await page.getByTestId("new-token").textContent())!.trim();
    const base = test.info().project.use.baseURL;
    expect((await fetch(`${base}/api/v1/jobs`, { headers: { Authorization: `Bearer ${token}` } })).status).toBe(200);
    const write = await fetch(`${base}/api/v1/exports`, {
      method: "POST",
      headers: { Authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ dataset: "orders" }),
    });
    expect(write.status).toBe(403);
    await page.getByRole("button", { name: "Revoke token read-only e2e" }).click();
    await confirmDialog(page, "Revoke token");
  });
});
