import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { parse } from "yaml";
import { metricNames } from "@/lib/ops/metrics";
import "@/lib/workloads";
import { healthThresholds, SIGNAL_METRIC } from "@/lib/ops/health";

type Rule = {
  alert?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
};
const rules = (parse(readFileSync("deploy/alerts.yaml", "utf8")) as { groups: { rules: Rule[] }[] }).groups.flatMap(
  (g) => g.rules,
);

/** The series a histogram or counter exposes besides its own name. */
function exposedNames(name: string): string[] {
  return [name, `${name}_bucket`, `${name}_sum`, `${name}_count`];
}

test("every metric an alert expression reads is one lib/ops/metrics.ts registers", () => {
  const known = new Set(metricNames().flatMap(exposedNames));
  assert.ok(known.has("conveyor_queue_oldest_ready_age_seconds"), "the name the autoscaling recipe uses");
  for (const rule of rules) {
    const used = [...rule.expr.matchAll(/\b(conveyor_[a-z0-9_]+)\b/g)].map((m) => m[1]!);
    assert.ok(used.length > 0, `${rule.alert} reads a Conveyor metric`);
    for (const name of used) assert.ok(known.has(name), `${rule.alert}: ${name} is not a registered metric`);
    // Label values the rules select on exist: the signals' names.
    for (const [, signal] of rule.expr.matchAll(/signal="([^"]+)"/g))
      assert.ok(Object.values(SIGNAL_METRIC).includes(signal!), `${rule.alert}: no signal ${signal}`);
  }
});

test("the alert rules cover each way of falling behind, each with a severity, summary and description", () => {
  const byName = new Map(rules.map((r) => [r.alert, r]));
  for (const name of [
    "ConveyorOldestReadyJobTooOld",
    "ConveyorStartLatencyHigh",
    "ConveyorWorkersSaturated",
    "ConveyorRetryRateHigh",
    "ConveyorDeadLettersGrowing",
    "ConveyorNoLiveWorkers",
  ])
    assert.ok(byName.has(name), `${name} is a rule`);
  assert.equal(byName.get("ConveyorWorkersSaturated")?.for, "10m", "saturated for 10 minutes");
  for (const r of rules) {
    assert.match(r.labels?.severity ?? "", /^(warning|critical)$/, `${r.alert}: severity`);
    assert.ok(r.annotations?.summary && r.annotations.description, `${r.alert}: summary and description`);
  }
  // Thresholds come from the exported gauge, not from numbers in the rules.
  const interactive = healthThresholds().interactive!.oldestReadyAge.behind;
  assert.ok(!byName.get("ConveyorOldestReadyJobTooOld")!.expr.includes(String(interactive)));
});

const promtool = spawnSync("promtool", ["--version"]).error ? null : "promtool";

test(
  "promtool checks the rules and runs their unit tests (deploy/alerts.test.yaml)",
  { skip: promtool ? false : "promtool is not installed (Debian: apt-get install prometheus)" },
  () => {
    const check = execFileSync("promtool", ["check", "rules", "deploy/alerts.yaml"], { encoding: "utf8" });
    assert.match(check, /SUCCESS: \d+ rules found/);
    const run = spawnSync("promtool", ["test", "rules", "deploy/alerts.test.yaml"], { encoding: "utf8" });
    assert.equal(run.status, 0, run.stdout + run.stderr);
  },
);
