import { after, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { resetEnvCache } from "@/lib/env";
import { resetStorage } from "@/lib/storage";
import { resetUploadServer } from "@/lib/uploads/tus";
import { formatImportReport, runImportChaos } from "../chaos/imports-harness";
import { useTestDatabase } from "../helpers/db";

// This process (uploads, cleanup) and the workers share one data directory.
const dataDir = mkdtempSync(path.join(tmpdir(), "conveyor-chaos-imports-"));
process.env.CONVEYOR_DATA_DIR = dataDir;
resetEnvCache();
resetStorage();
resetUploadServer();
after(() => rmSync(dataDir, { recursive: true, force: true }));

const fx = useTestDatabase({ seed: 0.001 });

test("import chaos, short: 4 imports on 2 workers SIGKILLed while chunks load and commits run — each import's good rows land exactly once, or none", async () => {
  const report = await runImportChaos({
    databaseUrl: fx.database.url,
    dataDir,
    email: "ada@acme.test",
    imports: 4,
    rowsEach: 6_000,
    chunkRows: 1_500,
    workers: 2,
    timeoutMs: 150_000,
    log: () => {},
  });
  console.log(formatImportReport(report));
  assert.ok(report.kills.load >= 1, "a worker was SIGKILLed while it loaded a chunk");
  assert.ok(report.kills.commit >= 1, "a worker was SIGKILLed while it committed");
  for (const c of report.checks) assert.ok(c.ok, `${c.name}: ${c.detail}`);
  // Each killed job was killed once: its retry finishes it, so every import ends succeeded.
  assert.equal(report.succeeded, report.imports, formatImportReport(report));
});
