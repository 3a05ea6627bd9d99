/**
 * The imports workload: a tenant's CSV or JSON Lines file (uploaded over tus,
 * lib/uploads) into its customers, orders or events, as a pipeline of stages
 * (./stages.ts, ./task.ts). Its task types, and the upkeep its workers run:
 * what ended imports leave, and uploads nobody used for a day.
 */
import { env } from "../env";
import { defineWorkload } from "../jobs/task";
import { importsApi } from "./openapi";
import { cleanupUploads } from "../uploads/service";
import { cleanupImports } from "./cleanup";
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
  periodic: [
    {
      name: "imports",
      everyMs: () => env().IMPORT_CLEANUP_MS,
      async run() {
        const r = await cleanupImports();
        const u = await cleanupUploads();
        return [
          ...(r.staging ? [`dropped ${r.staging} staging tables`] : []),
          ...(r.imports ? [`removed the files of ${r.imports} ended imports`] : []),
          ...(u.removed ? [`removed ${u.removed} uploads`] : []),
        ];
      },
    },
  ],
});
