/**
 * After the e2e run: every JSON answer the specs received from /api/* (recorded
 * by tests/e2e/fixtures.ts) must be documented in the OpenAPI document the app
 * served — its path, method and status — and validate against the schema
 * documented for that status. Fails the run naming the route and the error.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { compileResponseValidator, matchDocumentPath } from "../helpers/openapi";
import { RECORD_DIR, RECORDED_DOCUMENT, type RecordedResponse } from "./api-record";

export default async function checkRecordedResponses(): Promise<void> {
  if (!existsSync(RECORDED_DOCUMENT)) return; // no test ran
  const doc = JSON.parse(readFileSync(RECORDED_DOCUMENT, "utf8")) as object;
  const failures = new Map<string, string>();
  let checked = 0;
  for (const file of readdirSync(RECORD_DIR).filter((f) => f.endsWith(".jsonl"))) {
    for (const line of readFileSync(path.join(RECORD_DIR, file), "utf8").split("\n")) {
      if (!line) continue;
      const r = JSON.parse(line) as RecordedResponse;
      const route = matchDocumentPath(doc, r.path);
      const where = `${r.method} ${route ?? r.path} → ${r.status}`;
      checked++;
      if (!route) {
        failures.set(where, `${where}: the path is not in the OpenAPI document (${r.spec})`);
        continue;
      }
      try {
        const validate = compileResponseValidator(doc, route, r.method, String(r.status));
        if (!validate) {
          failures.set(where, `${where}: answered JSON, but the document gives this answer no JSON body (${r.spec})`);
        } else if (!validate(r.body)) {
          const errors = (validate.errors ?? [])
            .slice(0, 5)
            .map((e) => `${e.instancePath || "(body)"} ${e.message ?? ""} ${JSON.stringify(e.params)}`)
            .join("; ");
          failures.set(`${where} ${errors}`, `${where}: ${errors} (${r.spec}; e.g. ${r.path})`);
        }
      } catch (err) {
        failures.set(where, `${(err as Error).message} (${r.spec})`);
      }
    }
  }
  console.log(`[openapi] checked ${checked} recorded API answers against the OpenAPI document`);
  if (failures.size) {
    throw new Error(
      `${failures.size} kind(s) of recorded answers do not match the OpenAPI document (lib/openapi):\n` +
        [...failures.values()].slice(0, 30).join("\n"),
    );
  }
}
