import { test } from "node:test";
import assert from "node:assert/strict";
import { attemptsText, childNoun, jobTitle, kindOf, tileLabel } from "@/lib/client/kinds/lookup";
import { KINDS } from "@/lib/client/kinds";
import { landingFor, navFor, navSectionsFor } from "@/lib/client/nav";
import { progressMessage } from "@/lib/client/progress";

const progress = (p: Partial<Parameters<typeof progressMessage>[0]["progress"]>) => ({
  stage: null,
  unit: null,
  done: 0,
  total: null,
  detail: null,
  message: null,
  ...p,
});

test("a job's name, its children's noun and tiles come from its kind", () => {
  const request = { dataset: "events", format: "csv", compression: "gzip" };
  assert.equal(jobTitle({ type: "export", input: request }), "Events · CSV.gz export");
  assert.equal(
    jobTitle({ type: "export_part", input: { part: 3, parts: 20, request } }),
    "Part 3 of 20 · Events · CSV.gz export",
  );
  assert.equal(
    jobTitle({ type: "import_parse", input: { request: { dataset: "events" } } }),
    "Parse · Events · CSV import",
  );
  assert.equal(jobTitle({ type: "probe", input: {} }), "Probe", "a type no kind describes reads as its name");
  assert.equal(childNoun("import"), "stages");
  assert.equal(childNoun("import_load"), "chunks");
  assert.equal(childNoun("export"), "parts");
  assert.equal(tileLabel("import", { type: "import_commit", input: null }, 4), "Commit");
  assert.equal(tileLabel("import_load", { type: "import_load_chunk", input: null }, 1), "Chunk 2");
  assert.equal(tileLabel("export", { type: "export_part", input: null }, 1), "Part 2");
});

test("every job type belongs to one kind", () => {
  const types = KINDS.flatMap((k) => Object.keys(k.types));
  assert.equal(new Set(types).size, types.length);
  for (const t of types) assert.ok(kindOf(t));
});

test("the navigation holds the kinds' pages among the console's, by audience", () => {
  const member = navFor({ member: true, operator: false, admin: false }).map((n) => n.label);
  assert.deepEqual(member, ["Exports", "Imports", "Schedules", "Webhooks", "My jobs", "Settings"]);
  // An operator of a tenant is a member too: one "Webhooks" (their tenant's endpoints), not a console copy.
  const operator = navFor({ member: true, operator: true, admin: false }).map((n) => n.label);
  assert.equal(operator.filter((l) => l === "Webhooks").length, 1);
  const admin = navFor({ member: false, operator: true, admin: true }).map((n) => n.label);
  assert.deepEqual(admin, [
    "Exports",
    "Schedules",
    "My jobs",
    "Overview",
    "Jobs",
    "Queues",
    "Dead letters",
    "Tenant schedules",
    "Webhooks",
    "Stuck",
    "Audit",
    "People",
    "Workers",
    "Settings",
  ]);
});

test("the navigation is in named sections, no two links alike, and operators land on the overview", () => {
  const member = { member: true, operator: false, admin: false };
  const operator = { member: true, operator: true, admin: false };
  const admin = { member: false, operator: true, admin: true };
  assert.deepEqual(
    navSectionsFor(member).map((s) => s.label),
    ["Your work", "Account"],
  );
  assert.deepEqual(
    navSectionsFor(operator).map((s) => s.label),
    ["Your work", "Console", "Account"],
  );
  for (const who of [member, operator, admin]) {
    const labels = navFor(who).map((n) => n.label.toLowerCase());
    assert.equal(new Set(labels).size, labels.length);
  }
  assert.equal(landingFor(member), "/exports");
  assert.equal(landingFor(operator), "/ops/overview");
  assert.equal(landingFor(admin), "/ops/overview");
});

test("progress is worded from its fields, once", () => {
  const parse = { type: "import_parse", input: { request: { dataset: "events" } } };
  assert.equal(
    progressMessage({ ...parse, progress: progress({ stage: "parse", detail: { good: 2500, bad: 1 } }) }),
    "2,500 good, 1 bad",
  );
  const scan = { type: "import_scan", input: null };
  assert.equal(progressMessage({ ...scan, progress: progress({ stage: "scan" }) }), "Checking the file");
  assert.equal(
    progressMessage({ ...scan, progress: progress({ stage: "scan", detail: { rows: 1, columns: 3 } }) }),
    "1 row, 3 columns",
  );
  const commit = { type: "import_commit", input: { request: { dataset: "orders" } } };
  assert.equal(
    progressMessage({ ...commit, progress: progress({ stage: "commit", total: 12 }) }),
    "Moving 12 rows into orders",
  );
  assert.equal(
    progressMessage({ ...commit, progress: progress({ stage: "commit", detail: { inserted: 10, updated: 2 } }) }),
    "10 inserted, 2 updated",
  );
  assert.equal(
    progressMessage({
      type: "import_load_chunk",
      input: null,
      progress: progress({ stage: "load", detail: { chunk: 2, chunks: 7 } }),
    }),
    "Chunk 2 of 7",
  );
  const exp = { type: "export", input: { dataset: "events" } };
  assert.equal(progressMessage({ ...exp, progress: progress({ stage: "exporting" }) }), "Exporting events");
  assert.equal(
    progressMessage({ ...exp, progress: progress({ stage: "parts", detail: { parts: 4 } }) }),
    "Split into 4 parts",
  );
  assert.equal(
    progressMessage({ ...exp, progress: progress({ stage: "assembling", detail: { done: 3, parts: 4 } }) }),
    "Assembling 3 of 4 parts",
  );
  assert.equal(progressMessage({ ...exp, progress: progress({ stage: "done", done: 1200 }) }), "1,200 rows");
  // A pipeline's own count of stages, also while it waits for the stage's job.
  const imp = { type: "import", input: null };
  assert.equal(
    progressMessage({
      ...imp,
      progress: progress({ stage: "waiting", unit: "stages", done: 1, total: 5, detail: { name: "parse" } }),
    }),
    "Stage 2 of 5: parse",
  );
  assert.equal(
    progressMessage({ ...imp, progress: progress({ stage: "done", unit: "stages", done: 5, total: 5 }) }),
    "Done",
  );
  // A row from before structured progress keeps its sentence.
  assert.equal(
    progressMessage({ type: "probe", input: null, progress: progress({ message: "old words" }) }),
    "old words",
  );
});

test("attempts read against a budget only where the type has one: a delivery's is no budget", () => {
  assert.equal(attemptsText({ type: "export", attempts: 2, maxAttempts: 3 }), "2 of 3");
  assert.equal(attemptsText({ type: "webhook_delivery", attempts: 16, maxAttempts: 1011 }), "16");
  assert.equal(attemptsText({ type: "no_such_type", attempts: 1, maxAttempts: 5 }), "1 of 5");
});
