import type { Task, TaskList } from "graphile-worker";
import { taskCatalog } from "@/lib/jobs/catalog";
import { QUEUES, type QueueName } from "@/lib/jobs/task";
import exportTask from "./export";
import exportPartTask from "./export_part";
import probeTask from "./probe";

/** One handler per task type of the catalog (checked at start-up). */
const handlers: Record<string, Task> = {
  export: exportTask,
  export_part: exportPartTask,
  probe: probeTask,
};

const missing = Object.keys(taskCatalog).filter((t) => !(t in handlers));
if (missing.length) throw new Error(`worker/tasks has no handler for task types: ${missing.join(", ")}`);

/**
 * graphile-worker's task list for a pool serving `queues`: admission dispatches
 * a job as `<queue>:<type>`, so a pool fetches only its queues' jobs.
 */
export function taskListFor(queues: readonly QueueName[] = QUEUES): TaskList {
  const list: TaskList = {};
  for (const queue of queues) for (const [type, task] of Object.entries(handlers)) list[`${queue}:${type}`] = task;
  return list;
}

/** Every queue's tasks (tests and tools that run one pool for all). */
export const taskList: TaskList = taskListFor();
