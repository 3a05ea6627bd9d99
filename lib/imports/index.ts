/**
 * The imports workload: a tenant's CSV or JSON Lines file (uploaded over tus,
 * lib/uploads) into its customers, orders or events, as a pipeline of stages
 * (./stages.ts, ./task.ts). Its manifest: task types, settings, its table, and
 * the upkeep its workers run: what ended imports leave, and uploads nobody used
 * for a day. Its CLI (`npm run cli -- imports`) goes over the HTTP API
 * (scripts/cli/imports/), not through the database.
 */
import { defineWorkload } from "../jobs/task";
import { loop } from "../runtime/service";
import { importsApi } from "./openapi";
import { cleanupUploads } from "../uploads/service";
import { cleanupImports } from "./cleanup";
import { importsCommands } from "./cli";
import { importSettings } from "./settings";
import {
  importChunkTask,
  importCommitTask,
  importLoadChunkTask,
  importLoadTask,
  importParseTask,
  importScanTask,
} from "./stages";
import { importTask } from "./task";

export const importsWorkload = defineWorkload({
  name: "imports",
  openapi: importsApi,
  tasks: [
    importTask,
    importScanTask,
    importParseTask,
    importChunkTask,
    importLoadTask,
    importLoadChunkTask,
    importCommitTask,
  ],
  settings: importSettings,
  services: [
    loop({
      name: "imports",
      everyMs: () => importSettings().IMPORT_CLEANUP_MS,
      async run() {
        const r = await cleanupImports();
        const u = await cleanupUploads();
        return [
          ...(r.staging ? [`dropped ${r.staging} staging tables`] : []),
          ...(r.imports ? [`removed the files of ${r.imports} ended imports`] : []),
          ...(u.removed ? [`removed ${u.removed} uploads`] : []),
        ];
      },
    }),
  ],
  // An import's job stays until the cleanup dropped its staging table and files.
  tables: [{ name: "imports", keepsJobWhile: "t.cleaned_at IS NULL" }],
  cli: importsCommands,
});
