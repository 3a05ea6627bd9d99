/**
 * The priority names and their `jobs.priority` values, in one place (lib/jobs/priority.ts checks
 * and sets; this file has no database, so the browser may import it too).
 */
import { z } from "zod";

export const priorityNames = ["low", "normal", "high"] as const;
export type PriorityName = (typeof priorityNames)[number];

/** `jobs.priority` of each name: lower runs first. */
const VALUES: Record<PriorityName, number> = { high: -10, normal: 0, low: 10 };

/** The maximum a tenant may set: `normal` (the default: `high` is refused) or `high`. Low and normal are always allowed. */
export const maxPriorityNames = ["normal", "high"] as const;
export type MaxPriorityName = (typeof maxPriorityNames)[number];

/** The shared schema piece every create body uses for its `priority` field. */
export const priorityField = z.enum(priorityNames, { error: `must be one of ${priorityNames.join(", ")}` });

/** `jobs.priority` of a name (lower runs first). */
export function priorityValue(name: PriorityName): number {
  return VALUES[name];
}

/** The name of a stored priority: below 0 is high, above 0 low (code may enqueue other numbers). */
export function priorityName(value: number): PriorityName {
  return value < 0 ? "high" : value > 0 ? "low" : "normal";
}
