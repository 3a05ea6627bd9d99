import { existsSync } from "node:fs";
import { defineConfig, devices } from "@playwright/test";

// Prefer CHROMIUM_PATH, then Debian's /usr/bin/chromium, then Playwright's own browser.
const executablePath = process.env.CHROMIUM_PATH || (existsSync("/usr/bin/chromium") ? "/usr/bin/chromium" : undefined);
const port = Number(process.env.PORT ?? 3100);
const baseURL = `http://127.0.0.1:${port}`;

export default defineConfig({
  testDir: "tests/e2e",
  forbidOnly: Boolean(process.env.CI),
  retries: 0,
  workers: 2,
  timeout: 90_000,
  expect: { timeout: 30_000 },
  // Every JSON answer the specs received is checked against the OpenAPI document (tests/e2e/fixtures.ts records them).
  globalTeardown: "./tests/e2e/openapi-teardown.ts",
  reporter: process.env.CI ? [["list"]] : [["list"], ["html", { open: "never" }]],
  use: {
    baseURL,
    trace: "retain-on-failure",
    screenshot: "only-on-failure",
    launchOptions: {
      executablePath,
      args: [
        "--no-sandbox",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-quic",
      ],
    },
  },
  projects: [
    { name: "setup", testMatch: /auth\.setup\.ts/ },
    {
      name: "chromium",
      use: { ...devices["Desktop Chrome"] },
      dependencies: ["setup"],
      testIgnore: /(timing|fuzz|scenarios)\.spec\.ts/,
    },
    // The property-based fuzz pauses both queues while it runs: after the others, alone.
    {
      name: "fuzz",
      use: { ...devices["Desktop Chrome"] },
      dependencies: ["chromium"],
      testMatch: /fuzz\.spec\.ts/,
    },
    // Whole scenarios at desktop and phone widths; the incident pauses the demo tenant's export parts.
    {
      name: "scenarios",
      use: { ...devices["Desktop Chrome"] },
      // E2E_SCENARIOS_ALONE=1 (with TEST_ONLY=tests/e2e/scenarios.spec.ts) runs them without the rest, while working on them.
      dependencies: process.env.E2E_SCENARIOS_ALONE ? ["setup"] : ["fuzz"],
      testMatch: /scenarios\.spec\.ts/,
    },
    // Deadlines ("cancelled within a second") are checked once the other tests are done, on a quiet machine.
    {
      name: "timing",
      use: { ...devices["Desktop Chrome"] },
      // E2E_TIMING_ALONE=1 (with TEST_ONLY=tests/e2e/timing.spec.ts) runs them without the rest, while working on them.
      dependencies: process.env.E2E_TIMING_ALONE ? ["setup"] : ["scenarios"],
      testMatch: /timing\.spec\.ts/,
    },
  ],
  // The real product path: `npm start` (migrate, seed if empty, build if needed, app + worker).
  webServer: {
    command: "node --import tsx scripts/start.ts",
    // Large exports split by default only where two parts can run at once (half the cores; this is
    // often a 2-core machine): the split exports' specs need the split, whatever the machine.
    env: { ...(process.env as Record<string, string>), EXPORT_PARALLEL_PARTS: "4" },
    url: `${baseURL}/api/health`,
    timeout: 600_000,
    reuseExistingServer: false,
    stdout: "pipe",
    stderr: "pipe",
    gracefulShutdown: { signal: "SIGTERM", timeout: 20_000 },
  },
});
