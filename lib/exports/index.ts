/**
 * The exports workload: a tenant's customers, orders or events as CSV or JSON
 * Lines (optionally gzip), one file or split into parts zipped with a manifest.
 * Its task types and the expiry cleanup its workers run.
 */
import { env } from "../env";
import { defineWorkload } from "../jobs/task";
import { exportsApi } from "./openapi";
import { cleanupExpiredExports } from "./links";
import { exportPartTask } from "./parts";
import { exportTask } from "./task";

export const exportsWorkload = defineWorkload({
  name: "exports",
  openapi: exportsApi,
  tasks: [exportTask, exportPartTask],
  periodic: [
    {
      // Expired files leave storage and their exports show `expired`; ended exports' part files go.
      name: "exports",
      everyMs: () => env().EXPORT_CLEANUP_MS,
      async run() {
        const r = await cleanupExpiredExports();
        return [
          ...(r.files ? [`expired ${r.files} files (${r.jobs} exports)`] : []),
          ...(r.parts ? [`removed ${r.parts} part files of finished exports`] : []),
        ];
      },
    },
  ],
});
