/**
 * The suite's `test`: Playwright's, plus a recorder of every JSON answer from
 * /api/* that a spec's browser pages or API request contexts receive (method,
 * path, status, body), one JSON line each, under test-results/api-responses.
 * tests/e2e/openapi-teardown.ts checks each against the OpenAPI document once
 * the run is over. Specs import `test` and `expect` from here.
 */
import { appendFileSync, mkdirSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";
import {
  test as base,
  expect,
  type APIRequestContext,
  type APIResponse,
  type Browser,
  type BrowserContext,
  type Response,
} from "@playwright/test";
import { RECORD_DIR, RECORDED_DOCUMENT, type RecordedResponse } from "./api-record";

export { expect };

let recordFile: string | undefined;
let currentSpec = "";
const pending = new Set<Promise<void>>();
const watched = new WeakSet<BrowserContext>();

function record(
  method: string,
  url: string,
  status: number,
  contentType: string | undefined,
  read: () => Promise<Buffer>,
) {
  if (!recordFile) return;
  let pathname: string;
  try {
    pathname = new URL(url).pathname;
  } catch {
    return;
  }
  // Only the API's JSON answers: not pages, files, event streams, nor Auth.js's own endpoints.
  if (!pathname.startsWith("/api/") || pathname.startsWith("/api/auth/")) return;
  if (!contentType?.includes("application/json")) return;
  const file = recordFile;
  const spec = currentSpec;
  const done = read()
    .then((raw) => {
      const entry: RecordedResponse = { method, path: pathname, status, body: JSON.parse(raw.toString("utf8")), spec };
      appendFileSync(file, JSON.stringify(entry) + "\n");
    })
    // A page that navigated away, or a context already closed, took the body with it: nothing to check.
    .catch(() => {})
    .finally(() => pending.delete(done));
  pending.add(done);
}

function watchContext(context: BrowserContext) {
  if (watched.has(context)) return;
  watched.add(context);
  context.on("response", (res: Response) => {
    const req = res.request();
    if (req.resourceType() !== "fetch" && req.resourceType() !== "xhr") return;
    record(req.method(), res.url(), res.status(), res.headers()["content-type"], () => res.body());
  });
}

const PATCHED = Symbol.for("conveyor.e2e.recordApi");

/** Wraps `fetch` (which get, post, put, patch, delete and head call) of every API request context. */
function patchRequestContexts(proto: APIRequestContext) {
  const target = proto as APIRequestContext & { [PATCHED]?: true };
  if (target[PATCHED]) return;
  target[PATCHED] = true;
  const fetch = proto.fetch;
  proto.fetch = async function (this: APIRequestContext, urlOrRequest, options) {
    const res: APIResponse = await fetch.call(this, urlOrRequest, options);
    const method =
      options?.method?.toUpperCase() ??
      (typeof urlOrRequest === "string" ? "GET" : urlOrRequest.method().toUpperCase());
    record(method, res.url(), res.status(), res.headers()["content-type"], () => res.body());
    return res;
  };
}

/** Every browser context is watched: the `context` fixture's and those a spec opens with `browser.newContext()`. */
function patchBrowser(proto: Browser) {
  const target = proto as Browser & { [PATCHED]?: true };
  if (target[PATCHED]) return;
  target[PATCHED] = true;
  const newContext = proto.newContext;
  proto.newContext = async function (this: Browser, options) {
    const context = await newContext.call(this, options);
    watchContext(context);
    return context;
  };
}

export const test = base.extend<{ recordPage: void }, { recordApi: void }>({
  recordApi: [
    async ({ playwright, browser }, use, workerInfo) => {
      mkdirSync(RECORD_DIR, { recursive: true });
      recordFile = path.join(RECORD_DIR, `worker-${workerInfo.workerIndex}-${process.pid}.jsonl`);
      const baseURL = workerInfo.project.use.baseURL;
      const api = await playwright.request.newContext({ baseURL });
      patchRequestContexts(Object.getPrototypeOf(api) as APIRequestContext);
      patchBrowser(Object.getPrototypeOf(browser) as Browser);
      // The document the recorded answers are checked against: the one the app under test serves.
      const doc = await api.get("/api/v1/openapi.json");
      if (doc.ok()) {
        const tmp = `${RECORDED_DOCUMENT}.${process.pid}`;
        writeFileSync(tmp, await doc.body());
        renameSync(tmp, RECORDED_DOCUMENT);
      }
      await api.dispose();
      await use();
      await Promise.all([...pending]);
      recordFile = undefined;
    },
    { scope: "worker", auto: true },
  ],
  recordPage: [
    // eslint-disable-next-line no-empty-pattern -- Playwright reads a fixture's dependencies from this pattern
    async ({}, use, testInfo) => {
      currentSpec = `${path.basename(testInfo.file)}: ${testInfo.title}`;
      await use();
      await Promise.all([...pending]);
    },
    { auto: true },
  ],
});
