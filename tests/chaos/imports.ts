/**
 * npm run chaos:imports [-- --imports 8 --rows 20000 --chunk-rows 2000 --workers 3]
 * Runs the import chaos harness on a fresh database (on DATABASE_URL's server,
 * or the embedded Postgres); exits non-zero when a check fails.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { resetEnvCache } from "@/lib/env";
import { resetStorage } from "@/lib/storage";
import { withScratchDatabase } from "../../scripts/database";
import { seedDemo } from "../helpers/fixtures";
import { formatImportReport, runImportChaos } from "./imports-harness";

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      imports: { type: "string", default: "8" },
      rows: { type: "string", default: "20000" },
      "chunk-rows": { type: "string", default: "2000" },
      workers: { type: "string", default: "3" },
    },
  });
  const dataDir = mkdtempSync(path.join(tmpdir(), "conveyor-chaos-imports-"));
  process.env.CONVEYOR_DATA_DIR = dataDir;
  resetEnvCache();
  resetStorage();
  try {
    return await withScratchDatabase("conveyor_chaos_imports", async ({ url }) => {
      await seedDemo(0.001);
      const report = await runImportChaos({
        databaseUrl: url,
        dataDir,
        email: "ada@acme.test",
        imports: Number(values.imports),
        rowsEach: Number(values.rows),
        chunkRows: Number(values["chunk-rows"]),
        workers: Number(values.workers),
        timeoutMs: 600_000,
        log: console.log,
      });
      console.log(`\n${formatImportReport(report)}`);
      return report.ok ? 0 : 1;
    });
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(err.stack ?? err.message);
    process.exit(1);
  },
);
