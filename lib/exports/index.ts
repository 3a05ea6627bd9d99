/**
 * The exports workload: a tenant's customers, orders or events as CSV or JSON
 * Lines (optionally gzip), one file or split into parts zipped with a manifest.
 * Its manifest: task types, settings, and the expiry cleanup its workers run.
 */
import { defineWorkload } from "../jobs/task";
import { loop } from "../runtime/service";
import { exportsApi } from "./openapi";
import { cleanupExpiredExports } from "./links";
import { exportPartTask } from "./parts";
import { exportSettings } from "./settings";
import { exportTask } from "./task";

export const exportsWorkload = defineWorkload({
  name: "exports",
  openapi: exportsApi,
  tasks: [exportTask, exportPartTask],
  settings: exportSettings,
  services: [
    loop({
      // Expired files leave storage and their exports show `expired`; ended exports' part files go.
      name: "exports",
      everyMs: () => exportSettings().EXPORT_CLEANUP_MS,
      async run() {
        const r = await cleanupExpiredExports();
        return [
          ...(r.files ? [`expired ${r.files} files (${r.jobs} exports)`] : []),
          ...(r.parts ? [`removed ${r.parts} part files of finished exports`] : []),
        ];
      },
    }),
  ],
  // A split export's part files not yet swept: removed with their part job.
  tables: [
    {
      name: "jobs",
      jobColumn: "id",
      storedKey: "CASE WHEN t.type = 'export_part' AND NOT (t.result ? 'fileDeleted') THEN t.result->>'key' END",
    },
  ],
});
