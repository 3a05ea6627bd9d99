import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { STATE_LABELS, stateLabel, stateMeaning, STATUS_PALETTE } from "@/lib/client/status";
import { jobStatuses } from "@/lib/jobs/queries";

test("every status the API documents has a label, a meaning and a colour", () => {
  for (const status of jobStatuses) {
    assert.ok(status in STATE_LABELS, `${status} has no label in lib/client/status.ts`);
    assert.ok(stateLabel(status).length > 0);
    assert.ok(stateMeaning(status), `${status} has no meaning`);
    assert.ok(status in STATUS_PALETTE, `${status} has no colour`);
  }
  // A state the map does not know reads as itself (a webhook delivery's `pending`).
  assert.equal(stateLabel("pending"), "pending");
  assert.equal(stateMeaning("pending"), undefined);
});

test("the docs' table of states lists exactly the map's, in its order, with its meanings", () => {
  const doc = readFileSync("docs/API.md", "utf8");
  const block = /<!-- states:start -->\n([\s\S]*?)<!-- states:end -->/.exec(doc)?.[1];
  assert.ok(block, "docs/API.md has a states table");
  const rows = block
    .trim()
    .split("\n")
    .slice(2)
    .map((line) => line.split("|").map((c) => c.trim()));
  assert.deepEqual(
    rows.map((r) => [r[1], r[2]]),
    Object.entries(STATE_LABELS).map(([k, v]) => [`\`${k}\``, v.meaning]),
  );
});

test("the API's status list is the documented one, each a word of the docs' states", () => {
  const doc = readFileSync("docs/API.md", "utf8");
  for (const status of jobStatuses) assert.match(doc, new RegExp(`\\| \`${status}\` `));
});
