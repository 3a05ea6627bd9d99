/**
 * The typed registry of every task type. Enqueue validates against it; the
 * worker registers one graphile-worker task per entry.
 */
import { exportPartTask } from "../exports/parts";
import { exportTask } from "../exports/task";
import { probeTask } from "./probe";
import { toJobDto, type JobDto } from "./dto";
import type { TaskDefinition } from "./task";

// `any` input: the registry holds definitions of different input types.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const taskCatalog: Record<string, TaskDefinition<any, any>> = {
  [exportTask.type]: exportTask,
  [exportPartTask.type]: exportPartTask,
  [probeTask.type]: probeTask,
};

/** The definition of a task type, or undefined for an unknown type. */
export function getTaskDefinition(type: string): TaskDefinition<unknown, unknown> | undefined {
  return Object.hasOwn(taskCatalog, type) ? taskCatalog[type] : undefined;
}

/** Every input field any task marks sensitive (for searches, which must not look inside them). */
export function sensitiveFields(): string[] {
  return [...new Set(Object.values(taskCatalog).flatMap((d) => d.sensitive ?? []))];
}

/** The input as anyone reads it back: fields the task marks `sensitive` (secrets) are write-only, "[redacted]". */
export function redactInput(type: string, input: unknown): unknown {
  const sensitive = getTaskDefinition(type)?.sensitive ?? [];
  if (!sensitive.length || !input || typeof input !== "object" || Array.isArray(input)) return input;
  const out: Record<string, unknown> = { ...(input as Record<string, unknown>) };
  for (const key of sensitive) if (key in out) out[key] = "[redacted]";
  return out;
}

/** A job as the API shows it (toJobDto), with its sensitive input fields redacted. Server side. */
export function jobView(...args: Parameters<typeof toJobDto>): JobDto {
  const dto = toJobDto(...args);
  return { ...dto, input: redactInput(dto.type, dto.input) };
}
