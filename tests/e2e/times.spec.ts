import { expect, test } from "./fixtures";
import { storageStateFor } from "./helpers";

// Times are drawn in the browser, in the reader's zone, one way, with a kept switch to UTC.

test.describe("as ada (member), in Los Angeles", () => {
  test.use({ storageState: storageStateFor("ada@acme.test"), timezoneId: "America/Los_Angeles" });

  test("an export's window and its job's times read in Los Angeles, named one way; the UTC switch redraws them and is kept", async ({
    page,
  }) => {
    const hydration: string[] = [];
    page.on("console", (m) => {
      if (/hydrat|did not match/i.test(m.text())) hydration.push(m.text());
    });
    // 1 June – 1 July picked in Los Angeles: its midnights (summer time, UTC-7).
    const res = await page.request.post("/api/v1/exports", {
      data: {
        dataset: "orders",
        format: "csv",
        filter: { from: "2026-06-01T07:00:00.000Z", to: "2026-07-01T07:00:00.000Z" },
      },
    });
    expect(res.status()).toBe(202);
    const id = ((await res.json()) as { id: string }).id;
    const job = (await (await page.request.get(`/api/v1/jobs/${id}`)).json()) as { createdAt: string };

    await page.goto("/exports");
    const row = page.locator(`[data-job-id="${id}"]`);
    await expect(row).toContainText("from 1 Jun 2026 until 1 Jul 2026 (UTC-7)");

    // The job page on a full load: its details in Los Angeles' time, not the server's (UTC).
    await page.goto(`/jobs/${id}`);
    const requested = page.getByTestId("job-requested-at");
    const la = new Intl.DateTimeFormat("en-US", {
      timeZone: "America/Los_Angeles",
      hour: "2-digit",
      minute: "2-digit",
      hourCycle: "h23",
    }).format(new Date(job.createdAt));
    const offset = new Intl.DateTimeFormat("en-US", { timeZone: "America/Los_Angeles", timeZoneName: "longOffset" })
      .formatToParts(new Date(job.createdAt))
      .find((p) => p.type === "timeZoneName")!
      .value.replace(/^GMT-0?(\d+):00$/, "UTC-$1");
    await expect(requested).toHaveText(new RegExp(`^\\d{1,2} [A-Z][a-z]{2} \\d{4}, ${la}:\\d{2} ${offset}$`));

    // The switch: every time in UTC, on this page and the next, until switched back.
    const times = page.getByRole("group", { name: "Show times in" });
    await expect(times.getByRole("button", { name: /local time \(America\/Los_Angeles, UTC-[78]\)/ })).toHaveAttribute(
      "aria-pressed",
      "true",
    );
    await times.getByRole("button", { name: "UTC", exact: true }).click();
    const utc = new Date(job.createdAt).toISOString().slice(11, 16);
    await expect(requested).toHaveText(new RegExp(`, ${utc}:\\d{2} UTC$`));
    await page.goto("/exports");
    await expect(row).toContainText("from 1 Jun 2026, 07:00 until 1 Jul 2026, 07:00 (UTC)");
    await expect(page.getByRole("button", { name: "UTC", exact: true })).toHaveAttribute("aria-pressed", "true");
    await page.getByRole("button", { name: /local time/ }).click();
    await expect(row).toContainText("from 1 Jun 2026 until 1 Jul 2026 (UTC-7)");
    expect(hydration).toEqual([]);
  });
});
