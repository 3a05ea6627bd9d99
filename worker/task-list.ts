/**
 * graphile-worker's task list, built from the registry: one task per
 * registered task type and queue, `<queue>:<type>` (admission dispatches a job
 * under that identifier), each a call into the runner. No file per task type.
 */
import type { TaskList } from "graphile-worker";
import { queueNames, taskDefinitions } from "@/lib/jobs/registry";
import type { QueueName } from "@/lib/jobs/task";
import "@/lib/workloads";
import { dispatchToRunner } from "./dispatch";

/** The task list of a pool serving `queues`: it fetches only its queues' jobs. */
export function taskListFor(queues: readonly QueueName[] = queueNames()): TaskList {
  const list: TaskList = {};
  for (const queue of queues) {
    for (const def of taskDefinitions()) list[`${queue}:${def.type}`] = dispatchToRunner(def.type);
  }
  return list;
}
