import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import AxeBuilder from "@axe-core/playwright";
import { expect, type Page } from "@playwright/test";
import path from "node:path";
import pg from "pg";

/** The documented demo password: tests/run.ts asks `npm start` for it (CONVEYOR_DEMO_PASSWORD); otherwise it is random. */
export const DEMO_PASSWORD = "conveyor-demo";
export const storageStateFor = (who: string) => path.join("test-results", ".auth", `${who}.json`);

/** A query against the database the app under test uses. */
export async function sql<T extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

/** The number a `SELECT count(*) AS n …` returns. */
export async function sqlCount(text: string, values: unknown[] = []): Promise<number> {
  const [row] = await sql<{ n: string }>(text, values);
  return Number(row?.n ?? NaN);
}

/**
 * Headers that act as a demo user's signed-in browser session (its stored cookies, from our own
 * origin): what people management needs, which refuses API tokens.
 */
export function sessionHeaders(who: string, base: string): Record<string, string> {
  const { cookies } = JSON.parse(readFileSync(storageStateFor(who), "utf8")) as {
    cookies: { name: string; value: string }[];
  };
  return {
    cookie: cookies.map((c) => `${c.name}=${c.value}`).join("; "),
    origin: base,
    "content-type": "application/json",
  };
}

/** A fresh API token for a demo user, made by the real CLI. */
export function cliToken(email: string): string {
  const out = execFileSync(
    process.execPath,
    ["--import", "tsx", "scripts/cli.ts", "token", "create", "--email", email, "--name", "e2e"],
    {
      env: process.env,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  return out.trim().split("\n").at(-1)!.trim();
}

/** Counts CSV records (quoted fields may hold newlines). */
export function countCsvRecords(text: string): number {
  let rows = 0;
  let quoted = false;
  for (const ch of text) {
    if (ch === '"') quoted = !quoted;
    else if (ch === "\n" && !quoted) rows++;
  }
  return rows;
}

export { unzip } from "../helpers/zip";

/**
 * Answers the page's confirmation dialog (components/ui/confirm-dialog.tsx):
 * checks what it says, fills the reason when asked, and presses `button`.
 */
export async function confirmDialog(
  page: Page,
  button: string,
  opts: { message?: string; reason?: string } = {},
): Promise<void> {
  const dialog = page.getByRole("dialog");
  await expect(dialog).toBeVisible();
  if (opts.message) await expect(dialog.locator("#confirm-message")).toHaveText(opts.message);
  if (opts.reason !== undefined) await dialog.getByLabel(/Reason/).fill(opts.reason);
  await dialog.getByRole("button", { name: button, exact: true }).click();
  await expect(dialog).toHaveCount(0);
}

/** Runs axe-core on the page as it is: no serious or critical violation of WCAG 2.1 A/AA. */
export async function expectAccessible(page: Page, what: string): Promise<void> {
  const { violations } = await new AxeBuilder({ page })
    .withTags(["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"])
    .analyze();
  const grave = violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  const report = grave.map(
    (v) =>
      `${v.id} (${v.impact}): ${v.help}\n${v.nodes.map((n) => `    ${n.target.join(" ")}: ${n.failureSummary ?? ""}`).join("\n")}`,
  );
  expect(report, `accessibility of ${what}`).toEqual([]);
}

/**
 * How far the page scrolls sideways (0 when it fits its width), and the
 * elements that stick out (not counting those inside a box that scrolls or clips).
 */
export async function sidewaysOverflow(page: Page): Promise<{ over: number; culprits: string[] }> {
  return page.evaluate(() => {
    const width = window.innerWidth;
    const culprits: string[] = [];
    for (const el of document.querySelectorAll("body *")) {
      const box = el.getBoundingClientRect();
      if (box.right <= width + 0.5 || box.width === 0) continue;
      let up = el.parentElement;
      let contained = false;
      while (up && !contained) {
        contained = ["auto", "hidden", "scroll", "clip"].includes(getComputedStyle(up).overflowX);
        up = up.parentElement;
      }
      if (!contained && culprits.length < 6) {
        const cls = typeof el.className === "string" ? el.className.slice(0, 60) : "";
        culprits.push(
          `<${el.tagName.toLowerCase()} class="${cls}"> right ${Math.round(box.right)}: ${(el.textContent ?? "").slice(0, 40)}`,
        );
      }
    }
    return { over: document.documentElement.scrollWidth - width, culprits };
  });
}
