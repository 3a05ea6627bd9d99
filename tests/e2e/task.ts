import type { Locator, Page, TestInfo } from "@playwright/test";

/**
 * A user's task, walked as they would: every click and key press that a person makes goes
 * through `click`/`press` so it is counted, `shot` attaches a full-page screenshot to the
 * report, and `done` attaches the count (and returns it, for a spec to bound).
 * Used by the scenario specs (tests/e2e/tasks-*.spec.ts), each at 1280 and 390 px.
 */
export type Task = {
  click(target: Locator): Promise<void>;
  press(target: Locator, key: string): Promise<void>;
  shot(name: string): Promise<void>;
  clicks(): number;
  done(): Promise<number>;
};

export function task(page: Page, info: TestInfo, name: string): Task {
  let n = 0;
  const width = page.viewportSize()?.width ?? 0;
  const steps: string[] = [];
  return {
    async click(target) {
      await target.click();
      n += 1;
      steps.push(`click ${target.toString()}`);
    },
    async press(target, key) {
      await target.press(key);
      n += 1;
      steps.push(`press ${key} on ${target.toString()}`);
    },
    async shot(label) {
      await info.attach(`${name} at ${width} px: ${label}`, {
        body: await page.screenshot({ fullPage: true }),
        contentType: "image/png",
      });
    },
    clicks: () => n,
    async done() {
      info.annotations.push({ type: "clicks", description: `${name} at ${width} px: ${n} (${steps.join(" → ")})` });
      await info.attach(`${name} at ${width} px: ${n} clicks`, {
        body: steps.map((s, i) => `${i + 1}. ${s}`).join("\n") + "\n",
        contentType: "text/plain",
      });
      return n;
    },
  };
}

/** The two widths every task is walked at. */
export const WIDTHS = [
  { name: "desktop", viewport: { width: 1280, height: 900 } },
  { name: "phone", viewport: { width: 390, height: 844 } },
] as const;
