/** Where tests/e2e/fixtures.ts records the API's answers, and what a record holds (read by openapi-teardown.ts). */
import path from "node:path";

export const RECORD_DIR = path.join("test-results", "api-responses");
/** The OpenAPI document as the app under test served it. */
export const RECORDED_DOCUMENT = path.join(RECORD_DIR, "openapi.json");

export type RecordedResponse = { method: string; path: string; status: number; body: unknown; spec: string };
