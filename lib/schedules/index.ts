/**
 * The schedules workload: recurring jobs of other workloads' task types (an
 * export on a cron). It brings no task type of its own: its manifest lists the
 * scheduler (every worker process runs one), its settings, its history table
 * and its CLI commands.
 */
import { defineWorkload } from "../jobs/task";
import { schedulesCommands } from "./cli";
import { schedulesApi } from "./openapi";
import { Scheduler } from "./scheduler";
import { scheduleSettings } from "./settings";
import { pruneScheduleEvents } from "./sql/prune-schedule-events";

export const schedulesWorkload = defineWorkload({
  name: "schedules",
  tasks: [],
  settings: scheduleSettings,
  // The Scheduler is a service (lib/runtime): schedules' runs and delayed jobs, in every worker (no leader to lose).
  services: [new Scheduler()],
  openapi: schedulesApi,
  // Missed, skipped and buffered occurrences, after the tenant's job retention.
  history: [{ name: "schedule_events", prune: pruneScheduleEvents }],
  cli: schedulesCommands,
});
