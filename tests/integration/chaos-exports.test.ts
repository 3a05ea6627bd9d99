import { test } from "node:test";
import assert from "node:assert/strict";
import { formatExportReport, runExportChaos } from "../chaos/exports-harness";
import { useTestDatabase } from "../helpers/db";

const fx = useTestDatabase({ seed: 0.05 });

test("export chaos, short: workers SIGKILLed mid-file — each file continues from its checkpoint, re-reads at most one segment, and equals an uninterrupted run's", async () => {
  const report = await runExportChaos({
    databaseUrl: fx.database.url,
    email: "ada@acme.test",
    exports: 2,
    partRows: 15_000,
    segmentRows: 500,
    workers: 2,
    timeoutMs: 150_000,
    log: () => {},
  });
  console.log(formatExportReport(report));
  for (const c of report.checks) assert.ok(c.ok, `${c.name}: ${c.detail}\n${formatExportReport(report)}`);
});
