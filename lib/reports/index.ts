/**
 * The reports workload: a tenant's job-outcome report over a window (counts of its jobs by
 * type and status) as a small JSON or CSV file. Its manifest: one task type on the engine's
 * bulk queue, a setting, its CLI commands and its API description; its file is a stored file (lib/files), pruned
 * with its job.
 */
import { defineWorkload } from "../jobs/task";
import { reportsCommands } from "./cli";
import { reportsApi } from "./openapi";
import { reportSettings } from "./settings";
import { reportTask } from "./task";

export const reportsWorkload = defineWorkload({
  name: "reports",
  tasks: [reportTask],
  settings: reportSettings,
  cli: reportsCommands,
  openapi: reportsApi,
});
