/**
 * The typed registry of every task type. Enqueue validates against it; the
 * worker registers one graphile-worker task per entry.
 */
import { exportTask } from "../exports/task";
import { probeTask } from "./probe";
import type { TaskDefinition } from "./task";

// `any` input: the registry holds definitions of different input types.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const taskCatalog: Record<string, TaskDefinition<any, any>> = {
  [exportTask.type]: exportTask,
  [probeTask.type]: probeTask,
};

/** The definition of a task type, or undefined for an unknown type. */
export function getTaskDefinition(type: string): TaskDefinition<unknown, unknown> | undefined {
  return Object.hasOwn(taskCatalog, type) ? taskCatalog[type] : undefined;
}
