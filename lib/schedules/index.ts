/**
 * The schedules workload: recurring jobs of other workloads' task types (an
 * export on a cron). It brings no task type of its own: its manifest lists the
 * scheduler (every worker process runs one), its settings, its history table
 * and its CLI commands.
 */
import { defineWorkload } from "../jobs/task";
import type { Service, ServiceContext } from "../runtime/service";
import { schedulesCommands } from "./cli";
import { Scheduler } from "./scheduler";
import { scheduleSettings } from "./settings";
import { pruneScheduleEvents } from "./sql/prune-schedule-events";

/** The Scheduler as a service: started and stopped with its worker process. */
function schedulerService(): Service {
  let scheduler: Scheduler | null = null;
  return {
    name: "scheduler",
    async start(ctx: ServiceContext) {
      // Its lines say `[scheduler] …` already; the context tags them with the service's name.
      scheduler = new Scheduler((line, level = "info") => ctx.log(line.replace(/^\[scheduler\] /, ""), level));
      await scheduler.start();
    },
    async stop() {
      await scheduler?.stop();
      scheduler = null;
    },
  };
}

export const schedulesWorkload = defineWorkload({
  name: "schedules",
  tasks: [],
  settings: scheduleSettings,
  services: [schedulerService()],
  // Missed, skipped and buffered occurrences, after the tenant's job retention.
  history: [{ name: "schedule_events", prune: pruneScheduleEvents }],
  cli: schedulesCommands,
});
